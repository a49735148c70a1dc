// Collapsing unit dims to a rank-0 tensor and expanding back: the reassociation is empty.
module {
  func.func @scalar_tile() attributes {grid = [1]} {
    %one = arith.constant dense<2.5> : tensor<1x1xf32>
    %s = tensor.collapse_shape %one [] : tensor<1x1xf32> into tensor<f32>
    %e = tensor.empty() : tensor<4x8xf32>
    %b = linalg.broadcast ins(%s : tensor<f32>) outs(%e : tensor<4x8xf32>) dimensions = [0, 1]
    %back = tensor.expand_shape %s [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
    return
  }
}
