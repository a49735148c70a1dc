// linalg.generic needs one indexing map per operand, over its iteration space.
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @k(%x: tensor<4x8xf32>) attributes {grid = [1]} {
    %e = tensor.empty() : tensor<4x8xf32>
    // expected-error@+1 {{has 1 indexing map(s) for 2 operand(s)}}
    %y = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      linalg.yield %a : f32
    } -> tensor<4x8xf32>
    return
  }
}
