// Type aliases (!name = type) for the tile and tensor types of a kernel.
!tile = !ktdp.access_tile<8x64xindex>
!data = tensor<8x64xf16>
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#t = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @aliased(%a: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c8 : index
    %v = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %t = ktdp.construct_access_tile %v[%r, %c0] {access_tile_set = #t, access_tile_order = #o} : memref<64x64xf16> -> !tile
    %x = ktdp.load %t : !tile -> !data
    %y = arith.mulf %x, %x : !data
    ktdp.store %y, %t : !data, !tile
    return
  }
}
