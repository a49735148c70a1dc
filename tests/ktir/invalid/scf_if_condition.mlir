// scf.if needs an i1 condition, and with results an else region yielding them.
module {
  func.func @k(%a: index, %f: f32) attributes {grid = [1]} {
    // expected-error@+1 {{condition '%a' has type 'index' but 'i1' is expected}}
    scf.if %a {
    }
    %c = arith.cmpi eq, %a, %a : index
    // expected-error@+1 {{with results needs an 'else' region}}
    %r = scf.if %c -> (f32) {
      scf.yield %f : f32
    }
    return
  }
}
