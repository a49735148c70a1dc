// scf.for carrying a running sum in iter_args, and scf.if producing a value in both
// branches.
module {
  func.func @scalars(%n: index) -> index attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
      %next = arith.addi %acc, %i : index
      scf.yield %next : index
    }
    %big = arith.cmpi sgt, %sum, %c10 : index
    %r = scf.if %big -> (index) {
      %d = arith.divsi %sum, %c10 : index
      scf.yield %d : index
    } else {
      scf.yield %sum : index
    }
    return %r : index
  }
}
