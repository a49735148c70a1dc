// Defining the same SSA name twice.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{redefinition of value '%c0'}}
    %c0 = arith.constant 1 : index
    return
  }
}
