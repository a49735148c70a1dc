// R14: a reduce delivers to every producer or to exactly one tile.
#four = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#two = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>, %id: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #four -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+1 {{is a strict subset of the producers with more than one tile}}
    %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #two, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = arith.addf %a, %b : tensor<4xf32>
      ktdp.yield_reduced %s : tensor<4xf32>
    }
    return
  }
}
