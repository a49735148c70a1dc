// Only unit dimensions collapse to rank 0.
module {
  func.func @bad() attributes {grid = [1]} {
    %two = arith.constant dense<2.5> : tensor<1x2xf32>
    // expected-error@+1 {{does not reshape to rank 0}}
    %s = tensor.collapse_shape %two [] : tensor<1x2xf32> into tensor<f32>
    return
  }
}
