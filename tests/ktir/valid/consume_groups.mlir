// Two groups of four tiles; inside each group tile i receives from its mirror tile, a
// pairing that depends on both the consumer and the group: a (p)[c, g] dependency set.
#quads = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#mirror = affine_set<(p)[c, g] : (p + c - 8 * g - 3 == 0)>
#two = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
module {
  func.func @mirror(%v: tensor<16xf16>) attributes {grid = [8]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #quads -> !ktdp.tile_future<(tensor<16xf16>), groups = #two> {
    ^bb0(%g: index):
      %d = arith.addf %v, %v : tensor<16xf16>
      ktdp.yield_partial %d : tensor<16xf16>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #quads, producer_dependency_per_consumer = #mirror : !ktdp.tile_future<(tensor<16xf16>), groups = #two> -> tensor<16xf16>
    return
  }
}
