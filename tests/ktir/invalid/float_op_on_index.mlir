// addf on indices.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{works on floating-point values}}
    %z = arith.addf %c0, %c0 : index
    return
  }
}
