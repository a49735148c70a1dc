// RUN-INPUT: x = produce_document_spelling.x.npy
// RUN-EXPECT: y = produce_document_spelling.y.npy
// Inputs: x is f16 [2, 32], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: y[t] = x[t / 4] * 3 for the eight rows t, in f16.
// inter_tile_produce in the inter-tile document's spelling (producer set in an attribute
// dictionary, partial types before '->', a future type without parentheses): two groups
// of four tiles; the first tile of each group loads its group's row and hands it to all
// four, which each scale it and store it as their own row.
#xset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#yset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_set<(i)[g] : (i - 4 * g == 0)>
#group = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#two = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
module {
  func.func @fan_out(%x: index, %y: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %t = ktdp.get_compute_tile_id : index
    %xv = ktdp.construct_memory_view %x, sizes: [2, 32], strides: [32, 1] {coordinate_set = #xset, memory_space = #ktdp.memory_space<global>} : memref<2x32xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [8, 32], strides: [32, 1] {coordinate_set = #yset, memory_space = #ktdp.memory_space<global>} : memref<8x32xf16>
    %f = ktdp.inter_tile_produce {producer_tiles_per_group = #first} : tensor<1x32xf16> -> !ktdp.tile_future<tensor<1x32xf16>, groups = #two> {
    ^bb0(%g: index):
      %xt = ktdp.construct_access_tile %xv[%g, %c0] {access_tile_set = #row, access_tile_order = #id} : memref<2x32xf16> -> !ktdp.access_tile<1x32xindex>
      %xr = ktdp.load %xt : !ktdp.access_tile<1x32xindex> -> tensor<1x32xf16>
      ktdp.yield_partial %xr : tensor<1x32xf16>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #group : !ktdp.tile_future<tensor<1x32xf16>, groups = #two> -> tensor<1x32xf16>
    %three = arith.constant dense<3.0> : tensor<1x32xf16>
    %s = arith.mulf %r, %three : tensor<1x32xf16>
    %yt = ktdp.construct_access_tile %yv[%t, %c0] {access_tile_set = #row, access_tile_order = #id} : memref<8x32xf16> -> !ktdp.access_tile<1x32xindex>
    ktdp.store %s, %yt : tensor<1x32xf16>, !ktdp.access_tile<1x32xindex>
    return
  }
}
