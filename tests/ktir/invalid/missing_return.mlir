// A function body must end with func.return.
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    // expected-error@+1 {{must end with 'func.return'}}
    %c0 = arith.constant 0 : index
  }
}
