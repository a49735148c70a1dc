// A collapse whose group sizes do not multiply out.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %x = tensor.empty() : tensor<4x2x64xf16>
    // expected-error@+1 {{group [1, 2] has 128 element(s) but the matching dimension is 100}}
    %c = tensor.collapse_shape %x [[0], [1, 2]] : tensor<4x2x64xf16> into tensor<4x100xf16>
    return
  }
}
