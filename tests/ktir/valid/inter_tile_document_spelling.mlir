// The inter-tile communication document's spelling of a production: the producer set inside
// an attribute dictionary, the partial types written before '->', and a future type without
// parentheses (with and without the 'groups =' key). Tile 0 loads one row and broadcasts it
// to the four tiles of its group; each tile doubles the row and stores it as its own row.
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#one_row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#lead = affine_set<(i)[g] : (i - 4 * g == 0)>
#quad = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#g1 = affine_set<(g) : (g == 0)>
module {
  func.func @bcast_rows(%x: index, %y: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %t = ktdp.get_compute_tile_id : index
    %xv = ktdp.construct_memory_view %x, sizes: [1, 64], strides: [64, 1] {coordinate_set = #one_row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [4, 64], strides: [64, 1] {coordinate_set = #rows, memory_space = #ktdp.memory_space<global>} : memref<4x64xf16>
    %f = ktdp.inter_tile_produce {producer_tiles_per_group = #lead} : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = #g1> {
    ^bb0(%g: index):
      %xa = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #one_row, access_tile_order = #id2} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
      %xr = ktdp.load %xa : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
      ktdp.yield_partial %xr : tensor<1x64xf16>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #quad : !ktdp.tile_future<tensor<1x64xf16>, #g1> -> tensor<1x64xf16>
    %d = arith.addf %r, %r : tensor<1x64xf16>
    %ya = ktdp.construct_access_tile %yv[%t, %c0] {access_tile_set = #one_row, access_tile_order = #id2} : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>
    ktdp.store %d, %ya : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
