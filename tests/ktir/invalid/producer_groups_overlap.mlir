// R1: producer tile sets of different groups must be disjoint.
#wide = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 3 >= 0)>
#two = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
module {
  func.func @k(%v: tensor<4xf32>) attributes {grid = [8]} {
    // expected-error@+1 {{producer_tiles_per_group for groups 0 and 1 are not disjoint (tile 2 is in both)}}
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #wide -> !ktdp.tile_future<(tensor<4xf32>), groups = #two> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #wide, producer_dependency_per_consumer = affine_set<(p)[c] : (p - c == 0)> : !ktdp.tile_future<(tensor<4xf32>), groups = #two> -> tensor<4xf32>
    return
  }
}
