// linalg.reduce: the init must be the input without the reduced dimensions.
module {
  func.func @k(%x: tensor<4x8xf32>, %i: tensor<8xf32>) attributes {grid = [1]} {
    // expected-error@+1 {{reducing 'tensor<4x8xf32>' over dimensions [1] does not give 'tensor<8xf32>'}}
    %s = linalg.reduce { arith.addf } ins(%x : tensor<4x8xf32>) outs(%i : tensor<8xf32>) dimensions = [1]
    return
  }
}
