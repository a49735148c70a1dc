// A permutation that repeats a dimension.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %x = tensor.empty() : tensor<4x8xf16>
    %y = tensor.empty() : tensor<8x4xf16>
    // expected-error@+1 {{is not a permutation of 2 dimension(s)}}
    %t = linalg.transpose ins(%x : tensor<4x8xf16>) outs(%y : tensor<8x4xf16>) permutation = [0, 0]
    return
  }
}
