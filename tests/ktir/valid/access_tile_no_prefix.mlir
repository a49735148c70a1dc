// Printers drop the '!ktdp.access_tile' prefix after a colon; both spellings are read.
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @copy(%a: index, %b: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c16 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %at = ktdp.construct_access_tile %av[%r, %c0] {access_tile_set = #t, access_tile_order = #o} : memref<64x64xf16> -> <16x64xindex>
    %bt = ktdp.construct_access_tile %bv[%r, %c0] {access_tile_set = #t, access_tile_order = #o} : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %at : <16x64xindex> -> tensor<16x64xf16>
    ktdp.store %x, %bt : tensor<16x64xf16>, <16x64xindex>
    return
  }
}
