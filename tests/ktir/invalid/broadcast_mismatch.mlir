// Broadcasting along a dimension that leaves the wrong shape.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %x = tensor.empty() : tensor<8xf16>
    %y = tensor.empty() : tensor<4x6xf16>
    // expected-error@+1 {{cannot broadcast 'tensor<8xf16>' to 'tensor<4x6xf16>'}}
    %b = linalg.broadcast ins(%x : tensor<8xf16>) outs(%y : tensor<4x6xf16>) dimensions = [0]
    return
  }
}
