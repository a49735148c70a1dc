// Named linalg ops on tensors: elementwise add, sub, max, exp, copy, and a batched matmul.
module {
  func.func @named(%a: tensor<4x16x8xf16>, %b: tensor<4x8x16xf16>, %x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> (tensor<4x16x16xf16>, tensor<16x16xf32>) attributes {grid = [1]} {
    %e = tensor.empty() : tensor<16x16xf32>
    %s = linalg.add ins(%x, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %d = linalg.sub ins(%s, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %m = linalg.max ins(%d, %x : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %p = linalg.exp ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %c = linalg.copy ins(%p : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %zero = arith.constant 0.0 : f16
    %eb = tensor.empty() : tensor<4x16x16xf16>
    %z = linalg.fill ins(%zero : f16) outs(%eb : tensor<4x16x16xf16>) -> tensor<4x16x16xf16>
    %bm = linalg.batch_matmul ins(%a, %b : tensor<4x16x8xf16>, tensor<4x8x16xf16>) outs(%z : tensor<4x16x16xf16>) -> tensor<4x16x16xf16>
    return %bm, %c : tensor<4x16x16xf16>, tensor<16x16xf32>
  }
}
