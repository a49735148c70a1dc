// A tile whose type lists its set's extents in the set's order although its
// access_tile_order transposes them: the type must be 64x8.
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    // expected-error@+2 {{access_tile_set spans 8 point(s) in dimension 0 but the tile type says 64 in its dimension 1 (access_tile_order puts set dimension 0 there)}}
    // expected-error@+1 {{access_tile_set spans 64 point(s) in dimension 1 but the tile type says 8 in its dimension 0}}
    %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = #s, access_tile_order = #swap} : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    return
  }
}
