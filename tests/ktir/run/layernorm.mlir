// RUN-INPUT: x = layernorm.x.npy
// RUN-INPUT: w = layernorm.w.npy
// RUN-INPUT: b = layernorm.b.npy
// RUN-EXPECT: y = layernorm.y.npy
// Inputs: x is f32 [8, 32] uniform in [-2, 2), w and b are f32 [32] uniform in [-1, 1),
// from numpy's default_rng (seed in make_expected.py). Expected: y = (x - mean) /
// sqrt(var + 1e-5) * w + b over each row (biased variance). Two tiles, four rows each.
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#vec = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  func.func @ln(%x: index, %w: index, %b: index, %y: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c4 : index
    %xv = ktdp.construct_memory_view %x, sizes: [8, 32], strides: [32, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [8, 32], strides: [32, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %wv = ktdp.construct_memory_view %w, sizes: [32], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [32], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id2} : memref<8x32xf32> -> !ktdp.access_tile<4x32xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id2} : memref<8x32xf32> -> !ktdp.access_tile<4x32xindex>
    %wt = ktdp.construct_access_tile %wv[%c0] {access_tile_set = #vec, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<32xindex>
    %bt = ktdp.construct_access_tile %bv[%c0] {access_tile_set = #vec, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<32xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf32>
    %wd = ktdp.load %wt : !ktdp.access_tile<32xindex> -> tensor<32xf32>
    %bd = ktdp.load %bt : !ktdp.access_tile<32xindex> -> tensor<32xf32>
    %zero = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<4xf32>
    %e2 = tensor.empty() : tensor<4x32xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
    %inv = arith.constant dense<3.125e-02> : tensor<4x32xf32>
    %eps = arith.constant dense<1.0e-05> : tensor<4x32xf32>
    %s = linalg.reduce { arith.addf } ins(%a : tensor<4x32xf32>) outs(%z : tensor<4xf32>) dimensions = [1]
    %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%e2 : tensor<4x32xf32>) dimensions = [1]
    %mean = arith.mulf %sb, %inv : tensor<4x32xf32>
    %d = arith.subf %a, %mean : tensor<4x32xf32>
    %d2 = arith.mulf %d, %d : tensor<4x32xf32>
    %v = linalg.reduce { arith.addf } ins(%d2 : tensor<4x32xf32>) outs(%z : tensor<4xf32>) dimensions = [1]
    %vb = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e2 : tensor<4x32xf32>) dimensions = [1]
    %var = arith.mulf %vb, %inv : tensor<4x32xf32>
    %ve = arith.addf %var, %eps : tensor<4x32xf32>
    %sd = math.sqrt %ve : tensor<4x32xf32>
    %n = arith.divf %d, %sd : tensor<4x32xf32>
    %out = linalg.generic {indexing_maps = [#id2, #col, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%n, %wd, %bd : tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) outs(%e2 : tensor<4x32xf32>) {
    ^bb0(%nv: f32, %wi: f32, %bi: f32, %o: f32):
      %m1 = arith.mulf %nv, %wi : f32
      %m2 = arith.addf %m1, %bi : f32
      linalg.yield %m2 : f32
    } -> tensor<4x32xf32>
    ktdp.store %out, %yt : tensor<4x32xf32>, !ktdp.access_tile<4x32xindex>
    return
  }
}
