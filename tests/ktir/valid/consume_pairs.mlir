// Tiles 0 and 1 produce, all four tiles consume, and consumer c takes producer c floordiv
// 2, written as two inequalities with coefficient 2 on p (2p <= c <= 2p + 1): every
// consumer has one source and both producers are covered. A second consume's dependency
// set has no upper bound on p, so its coverage is left to run time, not refused.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#half = affine_set<(p)[c] : (c - 2 * p >= 0, -c + 2 * p + 1 >= 0)>
#one = affine_set<(g) : (g == 0)>
#first = affine_set<(i)[g] : (i == 0)>
#open = affine_set<(p)[c] : (p - c >= 0)>
module {
  func.func @pairs(%v: tensor<32xf32>) -> tensor<32xf32> attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<32xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<32xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons, producer_dependency_per_consumer = #half : !ktdp.tile_future<(tensor<32xf32>), groups = #one> -> tensor<32xf32>
    return %r : tensor<32xf32>
  }
  func.func @unbounded(%v: tensor<32xf32>) -> tensor<32xf32> attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #first -> !ktdp.tile_future<(tensor<32xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<32xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #first, producer_dependency_per_consumer = #open : !ktdp.tile_future<(tensor<32xf32>), groups = #one> -> tensor<32xf32>
    return %r : tensor<32xf32>
  }
}
