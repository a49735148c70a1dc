// R2: a future has exactly one use (its delivery op).
#t0 = affine_set<(i)[g] : (i == 0)>
#all = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>) attributes {grid = [4]} {
    // expected-error@+1 {{must have exactly one use (one delivery op), found 2}}
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #t0 -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    %a = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    %b = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    return
  }
}
