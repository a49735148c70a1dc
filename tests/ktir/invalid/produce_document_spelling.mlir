// In the document's spelling the partial types before '->' repeat the future's; a
// dictionary holds only the producer set.
#lead = affine_set<(i)[g] : (i - 4 * g == 0)>
#g1 = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<1x64xf16>) attributes {grid = [4]} {
    // expected-error@+1 {{the partial types before '->' must be the future's partial types}}
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #lead : tensor<2x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = #g1> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<1x64xf16>
    }
    // expected-error@+1 {{unknown attribute 'producers' on 'ktdp.inter_tile_produce'}}
    %f2 = ktdp.inter_tile_produce {producers = #lead} : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, #g1> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<1x64xf16>
    }
    return
  }
}
