// A tile whose row count is a symbol bound with symbols(...): '?' dimensions in the
// access tile and in the loaded tensor.
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @ragged(%a: index, %b: index, %rows: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c32 : index
    %av = ktdp.construct_memory_view %a, sizes: [256, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<256x64xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [256, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<256x64xf32>
    %at = ktdp.construct_access_tile %av[%r, %c0] symbols(%rows) {access_tile_set = #t, access_tile_order = #o} : memref<256x64xf32> -> !ktdp.access_tile<?x64xindex>
    %bt = ktdp.construct_access_tile %bv[%r, %c0] symbols(%rows) {access_tile_set = #t, access_tile_order = #o} : memref<256x64xf32> -> !ktdp.access_tile<?x64xindex>
    %x = ktdp.load %at : !ktdp.access_tile<?x64xindex> -> tensor<?x64xf32>
    %y = math.sqrt %x : tensor<?x64xf32>
    ktdp.store %y, %bt : tensor<?x64xf32>, !ktdp.access_tile<?x64xindex>
    return
  }
}
