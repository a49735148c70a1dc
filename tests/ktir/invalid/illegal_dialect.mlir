// Only ktdp, arith, func, linalg, math, memref, scf and tensor are legal.
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    // expected-error@+1 {{belongs to dialect 'affine', which is not legal in KTIR}}
    %b = affine.apply affine_map<(d0) -> (d0 + 1)>(%a)
    // expected-error@+1 {{belongs to dialect 'gpu', which is not legal in KTIR}}
    gpu.barrier
    return
  }
}
