// One subscript per base dimension, and an index view's subscripts match its rank.
#x = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#i = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#vars = affine_set<(a, b) : (a >= 0, -a + 7 >= 0, b >= 0, -b + 63 >= 0)>
#o2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @k(%xa: index, %ia: index) attributes {grid = [1]} {
    %xv = ktdp.construct_memory_view %xa, sizes: [64, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %iv = ktdp.construct_memory_view %ia, sizes: [8], strides: [1] {coordinate_set = #i, memory_space = #ktdp.memory_space<global>} : memref<8xi32>
    // expected-error@+1 {{number of subscripts (1) must match the base rank (2)}}
    %t = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %xv[ind(%iv[%r])] {variables_space_set = #vars, variables_space_order = #o2} : memref<64x64xf16>, memref<8xi32> -> !ktdp.access_tile<8x64xindex>
    // expected-error@+1 {{has 2 subscript(s) but its index view has rank 1}}
    %u = ktdp.construct_indirect_access_tile intermediate_variables(%r2, %c2) %xv[ind(%iv[%r2, %c2]), (%c2)] {variables_space_set = #vars, variables_space_order = #o2} : memref<64x64xf16>, memref<8xi32> -> !ktdp.access_tile<8x64xindex>
    return
  }
}
