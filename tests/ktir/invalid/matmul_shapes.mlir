// Inner dimensions of a matmul disagree.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %x = tensor.empty() : tensor<4x8xf16>
    %y = tensor.empty() : tensor<16x4xf16>
    %z = tensor.empty() : tensor<4x4xf32>
    // expected-error@+1 {{shapes do not agree: 4x8 times 16x4 into 4x4}}
    %m = linalg.matmul ins(%x, %y : tensor<4x8xf16>, tensor<16x4xf16>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    return
  }
}
