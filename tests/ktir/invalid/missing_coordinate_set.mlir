// A memory view without its coordinate_set.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{requires the 'coordinate_set' attribute}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    return
  }
}
