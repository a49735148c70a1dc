// A tile future's groups must be given somewhere: in its type (`groups = G`) or on the
// inter-tile op that makes it. Here neither says them.
#quad = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
module {
  func.func @k(%p: tensor<1x8xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #quad
    // expected-error@+1 {{this tile future type has no groups}}
        : tensor<1x8xf32> -> !ktdp.tile_future<tensor<1x8xf32>>
    {
    ^bb0(%g: index):
      ktdp.yield_partial %p : tensor<1x8xf32>
    }
    return
  }
}
