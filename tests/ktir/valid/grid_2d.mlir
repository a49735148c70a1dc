// A 2-D grid of 2x16 cores: two tile ids (x fastest), one 32x32 block per core.
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 511 >= 0)>
#t = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @blocks(%a: index, %b: index) attributes {grid = [2, 16]} {
    %c32 = arith.constant 32 : index
    %x, %y = ktdp.get_compute_tile_id : index, index
    %r = arith.muli %x, %c32 : index
    %c = arith.muli %y, %c32 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 512], strides: [512, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x512xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 512], strides: [512, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x512xf16>
    %at = ktdp.construct_access_tile %av[%r, %c] {access_tile_set = #t, access_tile_order = #o} : memref<64x512xf16> -> !ktdp.access_tile<32x32xindex>
    %bt = ktdp.construct_access_tile %bv[%r, %c] {access_tile_set = #t, access_tile_order = #o} : memref<64x512xf16> -> !ktdp.access_tile<32x32xindex>
    %v = ktdp.load %at : !ktdp.access_tile<32x32xindex> -> tensor<32x32xf16>
    %w = math.absf %v : tensor<32x32xf16>
    ktdp.store %w, %bt : tensor<32x32xf16>, !ktdp.access_tile<32x32xindex>
    return
  }
}
