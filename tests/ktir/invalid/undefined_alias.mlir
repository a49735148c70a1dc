// A coordinate set naming an alias that does not exist.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{'coordinate_set' refers to an undefined alias}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {coordinate_set = #nowhere, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    return
  }
}
