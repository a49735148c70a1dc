// An operation the playground does not know.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{unknown or unsupported operation 'ktdp.teleport'}}
    %x = ktdp.teleport %c0 : index
    return
  }
}
