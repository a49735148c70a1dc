// tensor.empty with a dynamic size, tensor.splat, and collapse/expand reshapes.
module {
  func.func @reshape(%n: index, %v: f32, %t: tensor<2x3x4xf32>) -> tensor<6x4xf32> attributes {grid = [1]} {
    %dyn = tensor.empty(%n) : tensor<?x8xf32>
    %s = tensor.splat %v : tensor<4x8xf32>
    %sd = tensor.splat %v[%n] : tensor<?x8xf32>
    %flat = tensor.collapse_shape %t [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
    %back = tensor.expand_shape %flat [[0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
    %again = tensor.collapse_shape %back [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
    return %again : tensor<6x4xf32>
  }
}
