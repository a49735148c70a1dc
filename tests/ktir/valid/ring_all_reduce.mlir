// All-reduce over 8 cores: each core sums its 16x64 slice into a 1x64 partial, the
// partials are produced for one group of 8 tiles and combined by inter_tile_reduce; every
// tile receives the full sum (consumers = producers), and tile 0 stores it.
#slices = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#slice = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#outset = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
#eight = affine_set<(i)[g] : (i - 8 * g >= 0, -i + 8 * g + 7 >= 0)>
#one_group = affine_set<(g) : (g == 0)>
module {
  func.func @all_reduce(%x: index, %y: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %id = ktdp.get_compute_tile_id : index
    %row = arith.muli %id, %c16 : index
    %xv = ktdp.construct_memory_view %x, sizes: [128, 64], strides: [64, 1] {coordinate_set = #slices, memory_space = #ktdp.memory_space<global>} : memref<128x64xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [1, 64], strides: [64, 1] {coordinate_set = #outset, memory_space = #ktdp.memory_space<global>} : memref<1x64xf32>
    %t = ktdp.construct_access_tile %xv[%row, %c0] {access_tile_set = #slice, access_tile_order = #ord} : memref<128x64xf32> -> !ktdp.access_tile<16x64xindex>
    %data = ktdp.load %t : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<64xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<64xf32>) -> tensor<64xf32>
    %colsum = linalg.reduce { arith.addf } ins(%data : tensor<16x64xf32>) outs(%init : tensor<64xf32>) dimensions = [0]
    %partial = tensor.expand_shape %colsum [[0, 1]] output_shape [1, 64] : tensor<64xf32> into tensor<1x64xf32>
    %identity = arith.constant dense<0.0> : tensor<1x64xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #eight -> !ktdp.tile_future<(tensor<1x64xf32>), groups = #one_group> {
    ^bb0(%gid: index):
      ktdp.yield_partial %partial : tensor<1x64xf32>
    }
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #eight, identity(%identity : tensor<1x64xf32>) : !ktdp.tile_future<(tensor<1x64xf32>), groups = #one_group> -> tensor<1x64xf32> {
    ^bb0(%lhs: tensor<1x64xf32>, %rhs: tensor<1x64xf32>):
      %s = arith.addf %lhs, %rhs : tensor<1x64xf32>
      ktdp.yield_reduced %s : tensor<1x64xf32>
    }
    %is0 = arith.cmpi eq, %id, %c0 : index
    scf.if %is0 {
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #outset, access_tile_order = #ord} : memref<1x64xf32> -> !ktdp.access_tile<1x64xindex>
      ktdp.store %sum, %yt : tensor<1x64xf32>, !ktdp.access_tile<1x64xindex>
    }
    return
  }
}
