// SSA dominance: a value is used before it is defined, and a value defined inside a
// loop body is used after the loop.
module {
  func.func @k(%n: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{operand '%later' does not dominate this use}}
    %x = arith.addi %c0, %later : index
    %later = arith.constant 1 : index
    scf.for %i = %c0 to %n step %later {
      %inner = arith.addi %i, %i : index
    }
    // expected-error@+1 {{operand '%inner' does not dominate this use}}
    %y = arith.addi %inner, %c0 : index
    return
  }
}
