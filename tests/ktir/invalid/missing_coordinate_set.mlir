// A memory view without its coordinate_set: KTDP requires the attribute, but public
// programs leave it out on dense views, so it is read as every point of the sizes and
// the verifier says so.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-warning@+1 {{has no 'coordinate_set' (KTDP requires one): read as every point of its sizes}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    return
  }
}
