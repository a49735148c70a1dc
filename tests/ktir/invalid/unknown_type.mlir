// A misspelled element type.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{unknown element type 'f17'}}
    %e = tensor.empty() : tensor<4xf17>
    return
  }
}
