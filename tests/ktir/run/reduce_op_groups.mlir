// RUN-INPUT: x = reduce_op_groups.x.npy
// RUN-EXPECT: m = reduce_op_groups.m.npy
// Inputs: x is f32 [8, 32], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: m[g] = x[4g:4g+4].max(axis=0), shape [2, 32].
// The spelling that names the groups on the inter-tile ops and leaves them out of the
// future type (`groups = G` after the tile set; `!ktdp.tile_future<T>`). Eight tiles in two
// groups of four each hold one row; each group's max arrives with the unit axis collapsed.
#xset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#mset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 31 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#quad = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#pair = affine_set<(g) : (g >= 0, -g + 1 >= 0)>
module {
  func.func @group_max(%x: index, %m: index) attributes {grid = [8]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %t = ktdp.get_compute_tile_id : index
    %xv = ktdp.construct_memory_view %x, sizes: [8, 32], strides: [32, 1] {coordinate_set = #xset, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %mv = ktdp.construct_memory_view %m, sizes: [2, 32], strides: [32, 1] {coordinate_set = #mset, memory_space = #ktdp.memory_space<global>} : memref<2x32xf32>
    %xt = ktdp.construct_access_tile %xv[%t, %c0] {access_tile_set = #row, access_tile_order = #id2} : memref<8x32xf32> -> !ktdp.access_tile<1x32xindex>
    %mine = ktdp.load %xt : !ktdp.access_tile<1x32xindex> -> tensor<1x32xf32>
    %f = ktdp.inter_tile_produce
        producer_tiles_per_group = #quad, groups = #pair
        : tensor<1x32xf32> -> !ktdp.tile_future<tensor<1x32xf32>>
    {
    ^bb0(%g: index):
      ktdp.yield_partial %mine : tensor<1x32xf32>
    }
    %lowest = arith.constant dense<-3.0e38> : tensor<1x32xf32>
    %best = ktdp.inter_tile_reduce(%f)
        consumer_tiles_per_group = #quad, groups = #pair,
        identity(%lowest : tensor<1x32xf32>)
        : !ktdp.tile_future<tensor<1x32xf32>> -> tensor<32xf32>
    {
    ^bb0(%l: tensor<1x32xf32>, %r: tensor<1x32xf32>):
      %b = arith.maximumf %l, %r : tensor<1x32xf32>
      ktdp.yield_reduced %b : tensor<1x32xf32>
    }
    %g = arith.divui %t, %c4 : index
    %first = arith.muli %g, %c4 : index
    %lead = arith.cmpi eq, %t, %first : index
    scf.if %lead {
      %mt = ktdp.construct_access_tile %mv[%g, %c0] {access_tile_set = #row, access_tile_order = #id2} : memref<2x32xf32> -> !ktdp.access_tile<1x32xindex>
      %b2 = tensor.expand_shape %best [[0, 1]] output_shape [1, 32] : tensor<32xf32> into tensor<1x32xf32>
      ktdp.store %b2, %mt : tensor<1x32xf32>, !ktdp.access_tile<1x32xindex>
    }
    return
  }
}
