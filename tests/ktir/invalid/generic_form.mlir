// MLIR's generic operation form is read; an op from a dialect KTIR does not allow is
// reported, and a legal op that stays generic is accepted with a warning.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %z = "arith.addi"(%c0, %c0) : (index, index) -> index
    // expected-error@+1 {{dialect 'gpu', which is not legal in KTIR}}
    "gpu.barrier"() : () -> ()
    // expected-warning@+1 {{in generic form is parsed but its rules are not checked}}
    %m = "memref.alloc"() {alignment = 64 : i64} : () -> memref<4xf16>
    return
  }
}
