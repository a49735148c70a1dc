// A dense constant with the wrong number of elements.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{value does not fit type 'tensor<3xf32>'}}
    %d = arith.constant dense<[1.0, 2.0]> : tensor<3xf32>
    return
  }
}
