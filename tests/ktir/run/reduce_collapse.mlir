// RUN-INPUT: x = reduce_collapse.x.npy
// RUN-EXPECT: y = reduce_collapse.y.npy
// Inputs: x is f32 [4, 16], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: y = x.sum(axis=0), shape [16].
// An inter_tile_reduce whose result drops the partial's unit tile axis: each of four
// tiles contributes one row as tensor<1x16xf32>, and the sum arrives as tensor<16xf32>.
#xset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 15 >= 0)>
#vec = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @sum_rows(%x: index, %y: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %t = ktdp.get_compute_tile_id : index
    %xv = ktdp.construct_memory_view %x, sizes: [4, 16], strides: [16, 1] {coordinate_set = #xset, memory_space = #ktdp.memory_space<global>} : memref<4x16xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [16], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<16xf32>
    %xt = ktdp.construct_access_tile %xv[%t, %c0] {access_tile_set = #row, access_tile_order = #id2} : memref<4x16xf32> -> !ktdp.access_tile<1x16xindex>
    %mine = ktdp.load %xt : !ktdp.access_tile<1x16xindex> -> tensor<1x16xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #four -> !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %mine : tensor<1x16xf32>
    }
    %ident = arith.constant dense<0.0> : tensor<1x16xf32>
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #four, identity(%ident : tensor<1x16xf32>) : !ktdp.tile_future<(tensor<1x16xf32>), groups = #one> -> tensor<16xf32> {
    ^bb0(%l: tensor<1x16xf32>, %q: tensor<1x16xf32>):
      %a = arith.addf %l, %q : tensor<1x16xf32>
      ktdp.yield_reduced %a : tensor<1x16xf32>
    }
    %is0 = arith.cmpi eq, %t, %c0 : index
    scf.if %is0 {
      %yt = ktdp.construct_access_tile %yv[%c0] {access_tile_set = #vec, access_tile_order = #id1} : memref<16xf32> -> !ktdp.access_tile<16xindex>
      ktdp.store %sum, %yt : tensor<16xf32>, !ktdp.access_tile<16xindex>
    }
    return
  }
}
