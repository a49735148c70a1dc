// The spec's examples sometimes write '/' where MLIR needs 'floordiv'.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-warning@+1 {{read as 'floordiv'}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 / 2 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8x64xf16>
    return
  }
}
