// RUN-INPUT: x = linalg_index.x.npy
// RUN-EXPECT: y = linalg_index.y.npy
// Inputs: x is f32 [16, 16], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: y[i, j] = x[i, j] + (i * 16 + j) / 256 where j <= i, and
// -100 elsewhere (a causal mask that also reads the iteration indices as numbers).
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @causal(%x: index, %y: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %scale = arith.constant 3.906250e-03 : f32
    %masked = arith.constant -100.0 : f32
    %xv = ktdp.construct_memory_view %x, sizes: [16, 16], strides: [16, 1] {coordinate_set = #blk, memory_space = #ktdp.memory_space<global>} : memref<16x16xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [16, 16], strides: [16, 1] {coordinate_set = #blk, memory_space = #ktdp.memory_space<global>} : memref<16x16xf32>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x16xf32> -> !ktdp.access_tile<16x16xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x16xf32> -> !ktdp.access_tile<16x16xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<16x16xindex> -> tensor<16x16xf32>
    %e = tensor.empty() : tensor<16x16xf32>
    %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
    ^bb0(%v: f32, %o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %i16 = arith.muli %i, %c16 : index
      %flat = arith.addi %i16, %j : index
      %fi = arith.index_cast %flat : index to i32
      %ff = arith.sitofp %fi : i32 to f32
      %off = arith.mulf %ff, %scale : f32
      %w = arith.addf %v, %off : f32
      %keep = arith.cmpi ule, %j, %i : index
      %r = arith.select %keep, %w, %masked : f32
      linalg.yield %r : f32
    } -> tensor<16x16xf32>
    ktdp.store %b, %yt : tensor<16x16xf32>, !ktdp.access_tile<16x16xindex>
    return
  }
}
