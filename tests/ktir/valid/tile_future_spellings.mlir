// Broadcast from tile 0 to tiles 0..3, with the future type written three ways: in full,
// without the prefix after a colon, and without the parentheses around the partials.
#tile0 = affine_set<(i)[g] : (i - 4 * g == 0)>
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @bcast(%seed: tensor<1x64xf16>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #tile0 -> !ktdp.tile_future<tensor<1x64xf16>, groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %seed : tensor<1x64xf16>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #four : <(tensor<1x64xf16>), groups = #one> -> tensor<1x64xf16>
    %f2 = ktdp.inter_tile_produce producer_tiles_per_group = #tile0 -> <(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> {
    ^bb0(%g2: index):
      ktdp.yield_partial %r : tensor<1x64xf16>
    }
    %r2 = ktdp.inter_tile_consume(%f2) consumer_tiles_per_group = #four : !ktdp.tile_future<(tensor<1x64xf16>), groups = affine_set<(g) : (g == 0)>> -> tensor<1x64xf16>
    return
  }
}
