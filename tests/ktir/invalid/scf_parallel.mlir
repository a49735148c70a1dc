// scf.parallel is listed by the spec but given no meaning yet.
module {
  func.func @k(%n: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{'scf.parallel' is listed by the KTIR spec but given no meaning yet (known gap)}}
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    }
    return
  }
}
