// Row sums with linalg.generic over a (parallel, reduction) iteration space; the
// iterator types are written in both spellings MLIR accepts.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func @row_sums(%x: tensor<16x32xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {grid = [1]} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<16x32xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    } -> tensor<16xf32>
    %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = [#linalg.iterator_type<parallel>, #linalg.iterator_type<reduction>]} ins(%x : tensor<16x32xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %sq = arith.mulf %in, %in : f32
      %a = arith.addf %sq, %acc : f32
      linalg.yield %a : f32
    } -> tensor<16xf32>
    return %s, %m : tensor<16xf32>, tensor<16xf32>
  }
}
