// linalg.index names a loop of the linalg.generic whose body holds it.
#o = affine_map<(d0) -> (d0)>
module {
  func.func @k(%x: tensor<8xf32>) attributes {grid = [1]} {
    // expected-error@+1 {{must be directly inside a 'linalg.generic' body, not in 'func.func'}}
    %i = linalg.index 0 : index
    %e = tensor.empty() : tensor<8xf32>
    %y = linalg.generic {indexing_maps = [#o, #o], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%v: f32, %out: f32):
      // expected-error@+1 {{dimension 1 is out of range: the enclosing 'linalg.generic' has 1 loop(s)}}
      %j = linalg.index 1 : index
      linalg.yield %v : f32
    } -> tensor<8xf32>
    return
  }
}
