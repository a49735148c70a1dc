// tensor.empty with a dynamic dimension but no size operand.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{has 0 size operand(s) for 1 dynamic dimension(s)}}
    %e = tensor.empty() : tensor<?x4xf32>
    return
  }
}
