// Routing: tiles 0 and 1 produce, tiles 2 and 3 consume; the dependency set pairs
// consumer c with producer c - 2, so every consumer has exactly one source.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i - 2 >= 0, -i + 3 >= 0)>
#pair = affine_set<(p)[c] : (p - c + 2 == 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @route(%v: tensor<32xf32>) -> tensor<32xf32> attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<32xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<32xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons, producer_dependency_per_consumer = #pair : !ktdp.tile_future<(tensor<32xf32>), groups = #one> -> tensor<32xf32>
    return %r : tensor<32xf32>
  }
}
