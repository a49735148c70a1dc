// Three sizes for a rank-2 memref.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{has 3 sizes and 2 strides but the memref has rank 2}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64, 1], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    return
  }
}
