// MLIR's generic operation form is not read yet.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{generic operation form}}
    %z = "arith.addi"(%c0, %c0) : (index, index) -> index
    return
  }
}
