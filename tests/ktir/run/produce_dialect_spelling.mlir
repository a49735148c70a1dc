// RUN-INPUT: x = produce_dialect_spelling.x.npy
// RUN-EXPECT: y = produce_dialect_spelling.y.npy
// Inputs: x is f32 [16, 32], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: y = the column sums of x, as [1, 32].
// inter_tile_produce in the dialect's printed spelling (producer set as a keyword, future
// type with parentheses): four tiles each sum four rows, and an all-reduce adds the four
// partials; tile 3 stores the result.
#xset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @col_sum(%x: index, %y: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c4 : index
    %xv = ktdp.construct_memory_view %x, sizes: [16, 32], strides: [32, 1] {coordinate_set = #xset, memory_space = #ktdp.memory_space<global>} : memref<16x32xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [1, 32], strides: [32, 1] {coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x32xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x32xf32> -> !ktdp.access_tile<4x32xindex>
    %blkv = ktdp.load %xt : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
    %cs = linalg.reduce { arith.addf } ins(%blkv : tensor<4x32xf32>) outs(%z : tensor<32xf32>) dimensions = [0]
    %part = tensor.expand_shape %cs [[0, 1]] output_shape [1, 32] : tensor<32xf32> into tensor<1x32xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #four -> !ktdp.tile_future<(tensor<1x32xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %part : tensor<1x32xf32>
    }
    %ident = arith.constant dense<0.0> : tensor<1x32xf32>
    %sum = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #four, identity(%ident : tensor<1x32xf32>) : !ktdp.tile_future<(tensor<1x32xf32>), groups = #one> -> tensor<1x32xf32> {
    ^bb0(%l: tensor<1x32xf32>, %q: tensor<1x32xf32>):
      %a = arith.addf %l, %q : tensor<1x32xf32>
      ktdp.yield_reduced %a : tensor<1x32xf32>
    }
    %last = arith.cmpi eq, %t, %c3 : index
    scf.if %last {
      %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #row, access_tile_order = #id} : memref<1x32xf32> -> !ktdp.access_tile<1x32xindex>
      ktdp.store %sum, %yt : tensor<1x32xf32>, !ktdp.access_tile<1x32xindex>
    }
    return
  }
}
