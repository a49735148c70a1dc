// R8: with several producers in a group, a consume must name one source per consumer.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i - 2 >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+1 {{group 0 has 2 producers}}
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    return
  }
}
