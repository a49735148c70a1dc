// R3: a declared dependency must name a producer tile.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#cons = affine_set<(i)[g] : (i - 2 >= 0, -i + 3 >= 0)>
#off_by_one = affine_set<(p)[c] : (p - c + 1 == 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+1 {{for consumer 3 group 0 references producer tile 2 which is not in producer_tiles_per_group}}
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #cons, producer_dependency_per_consumer = #off_by_one : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    return
  }
}
