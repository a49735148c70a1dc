// RUN-INPUT: x = rope.x.npy
// RUN-INPUT: cos = rope.cos.npy
// RUN-INPUT: sin = rope.sin.npy
// RUN-EXPECT: y = rope.y.npy
// Inputs: x is f32 [8, 32] uniform in [-1, 1); cos and sin are f32 [8, 16], the cosine
// and sine of angles uniform in [0, 2 pi), from numpy's default_rng (seed in
// make_expected.py). Expected, with x1 = x[:, :16] and x2 = x[:, 16:]:
// y = concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin) (rotation of the two halves).
#xs = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#hs = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @rope(%x: index, %cos: index, %sin: index, %y: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %xv = ktdp.construct_memory_view %x, sizes: [8, 32], strides: [32, 1] {coordinate_set = #xs, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [8, 32], strides: [32, 1] {coordinate_set = #xs, memory_space = #ktdp.memory_space<global>} : memref<8x32xf32>
    %cv = ktdp.construct_memory_view %cos, sizes: [8, 16], strides: [16, 1] {coordinate_set = #hs, memory_space = #ktdp.memory_space<global>} : memref<8x16xf32>
    %sv = ktdp.construct_memory_view %sin, sizes: [8, 16], strides: [16, 1] {coordinate_set = #hs, memory_space = #ktdp.memory_space<global>} : memref<8x16xf32>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #xs, access_tile_order = #id} : memref<8x32xf32> -> !ktdp.access_tile<8x32xindex>
    %ct = ktdp.construct_access_tile %cv[%c0, %c0] {access_tile_set = #hs, access_tile_order = #id} : memref<8x16xf32> -> !ktdp.access_tile<8x16xindex>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {access_tile_set = #hs, access_tile_order = #id} : memref<8x16xf32> -> !ktdp.access_tile<8x16xindex>
    %lo = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #hs, access_tile_order = #id} : memref<8x32xf32> -> !ktdp.access_tile<8x16xindex>
    %hi = ktdp.construct_access_tile %yv[%c0, %c16] {access_tile_set = #hs, access_tile_order = #id} : memref<8x32xf32> -> !ktdp.access_tile<8x16xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf32>
    %c = ktdp.load %ct : !ktdp.access_tile<8x16xindex> -> tensor<8x16xf32>
    %s = ktdp.load %st : !ktdp.access_tile<8x16xindex> -> tensor<8x16xf32>
    %x1 = tensor.extract_slice %a[0, 0] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
    %x2 = tensor.extract_slice %a[0, 16] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
    %p1 = arith.mulf %x1, %c : tensor<8x16xf32>
    %p2 = arith.mulf %x2, %s : tensor<8x16xf32>
    %r1 = arith.subf %p1, %p2 : tensor<8x16xf32>
    %q1 = arith.mulf %x2, %c : tensor<8x16xf32>
    %q2 = arith.mulf %x1, %s : tensor<8x16xf32>
    %r2 = arith.addf %q1, %q2 : tensor<8x16xf32>
    ktdp.store %r1, %lo : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    ktdp.store %r2, %hi : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    return
  }
}
