// RUN-INPUT: a = transpose_order.a.npy
// RUN-EXPECT: b = transpose_order.b.npy
// RUN-EXPECT: c = transpose_order.c.npy
// Inputs: a is f32 [64, 32], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: b and c = a transposed, [32, 64].
// A transpose done by an access tile's order alone. The tile over b covers b's whole
// 32x64 set, but its access_tile_order (d0, d1) -> (d1, d0) enumerates d1 outermost, so
// the tile type lists the set's extents in that order: 64x32. Storing a's rows through it
// writes a[i, j] to b[j, i]. The second function writes c through the same order, one
// 16-row block of a per core, to check the order with a non-zero origin.
#a = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#b = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#b_cols = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @whole(%a: index, %b: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 32], strides: [32, 1] {coordinate_set = #a, memory_space = #ktdp.memory_space<global>} : memref<64x32xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [32, 64], strides: [64, 1] {coordinate_set = #b, memory_space = #ktdp.memory_space<global>} : memref<32x64xf32>
    %at = ktdp.construct_access_tile %av[%c0, %c0] {access_tile_set = #a, access_tile_order = #id} : memref<64x32xf32> -> !ktdp.access_tile<64x32xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {access_tile_set = #b, access_tile_order = #swap} : memref<32x64xf32> -> !ktdp.access_tile<64x32xindex>
    %x = ktdp.load %at : !ktdp.access_tile<64x32xindex> -> tensor<64x32xf32>
    ktdp.store %x, %bt : tensor<64x32xf32>, !ktdp.access_tile<64x32xindex>
    return
  }
  func.func @blocks(%a: index, %c: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c16 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 32], strides: [32, 1] {coordinate_set = #a, memory_space = #ktdp.memory_space<global>} : memref<64x32xf32>
    %cv = ktdp.construct_memory_view %c, sizes: [32, 64], strides: [64, 1] {coordinate_set = #b, memory_space = #ktdp.memory_space<global>} : memref<32x64xf32>
    %at = ktdp.construct_access_tile %av[%r, %c0] {access_tile_set = #rows, access_tile_order = #id} : memref<64x32xf32> -> !ktdp.access_tile<16x32xindex>
    %ct = ktdp.construct_access_tile %cv[%c0, %r] {access_tile_set = #b_cols, access_tile_order = #swap} : memref<32x64xf32> -> !ktdp.access_tile<16x32xindex>
    %x = ktdp.load %at : !ktdp.access_tile<16x32xindex> -> tensor<16x32xf32>
    ktdp.store %x, %ct : tensor<16x32xf32>, !ktdp.access_tile<16x32xindex>
    return
  }
}
