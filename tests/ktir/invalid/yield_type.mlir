// A loop whose yield does not match its iter_args.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %e = tensor.empty() : tensor<4xf32>
    %f = tensor.empty() : tensor<8xf32>
    %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%acc = %e) -> (tensor<4xf32>) {
      // expected-error@+1 {{'scf.yield' types must match the loop's iter_args}}
      scf.yield %f : tensor<8xf32>
    }
    return
  }
}
