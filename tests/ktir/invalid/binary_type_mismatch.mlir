// Adding tensors of different shapes.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %x = tensor.empty() : tensor<4x8xf16>
    %y = tensor.empty() : tensor<8x4xf16>
    // expected-error@+1 {{operand '%y' has type 'tensor<8x4xf16>' but 'tensor<4x8xf16>' is expected}}
    %z = arith.addf %x, %y : tensor<4x8xf16>
    return
  }
}
