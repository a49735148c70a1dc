// An add whose row count is a runtime argument: the view's size is symbolic, bound to the
// coordinate_set's symbol; the loop bound comes from runtime_arg_extract.
#rows_by_64 = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @add_rt(%a: index, %c: index, %m: !ktdp.runtime_arg<index, granularity = 32, upperbound = 4096>) attributes {grid = [32]} {
    %n = ktdp.runtime_arg_extract value from %m : !ktdp.runtime_arg<index, granularity = 32, upperbound = 4096> -> index
    %g = ktdp.runtime_arg_extract granularity from %m : !ktdp.runtime_arg<index, granularity = 32, upperbound = 4096> -> index
    %ub = ktdp.runtime_arg_extract upperbound from %m : !ktdp.runtime_arg<index, granularity = 32, upperbound = 4096> -> index
    %c0 = arith.constant 0 : index
    %id = ktdp.get_compute_tile_id : index
    %av = ktdp.construct_memory_view %a, sizes: [%n, 64], strides: [64, 1] {coordinate_set = #rows_by_64, memory_space = #ktdp.memory_space<global>} : memref<?x64xf32>
    %cv = ktdp.construct_memory_view %c, sizes: [%n, 64], strides: [64, 1] {coordinate_set = #rows_by_64, memory_space = #ktdp.memory_space<global>} : memref<?x64xf32>
    %bound = arith.minsi %n, %ub : index
    scf.for %r = %id to %bound step %g {
      %t = ktdp.construct_access_tile %av[%r, %c0] {access_tile_set = #row, access_tile_order = #ord} : memref<?x64xf32> -> !ktdp.access_tile<1x64xindex>
      %o = ktdp.construct_access_tile %cv[%r, %c0] {access_tile_set = #row, access_tile_order = #ord} : memref<?x64xf32> -> !ktdp.access_tile<1x64xindex>
      %x = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
      %y = arith.addf %x, %x : tensor<1x64xf32>
      ktdp.store %y, %o : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
