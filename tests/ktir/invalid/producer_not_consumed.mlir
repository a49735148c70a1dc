// R4: every producer must be some consumer's dependency.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i - 2 >= 0, -i + 3 >= 0)>
#all_from_0 = affine_set<(p)[c] : (p == 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+1 {{does not cover producer tile 1}}
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons, producer_dependency_per_consumer = #all_from_0 : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    return
  }
}
