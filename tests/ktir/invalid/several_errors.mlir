// The parser recovers after a bad line and reports every problem in one run.
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    // expected-error@+1 {{unknown or unsupported operation 'arith.frobnicate'}}
    %x = arith.frobnicate %a : index
    // expected-error@+1 {{unknown type 'flaot'}}
    %y = arith.constant 1.0 : flaot
    // expected-error@+1 {{expected ':' before the end of the line}}
    %z = arith.addi %a, %a
    return
  }
}
