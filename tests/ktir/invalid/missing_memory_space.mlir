// A memory view without its memory_space.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{requires the 'memory_space' attribute}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>} : memref<8x64xf16>
    return
  }
}
