// RUN-INPUT: cache = paged_copy.cache.npy
// RUN-INPUT: table = paged_copy.table.npy
// RUN-EXPECT: out = paged_copy.out.npy
// Inputs: cache is f16 [16, 2, 8, 16] (pages x heads x tokens-per-page x dim), uniform in
// [-1, 1) from numpy's default_rng; table is i32 [2, 4], a permutation of eight distinct
// pages from the same generator (seeds in make_expected.py). Expected: out[s, h, p, d] =
// cache[table[s, p / 8], h, p mod 8, d], shape [2, 2, 32, 16].
// A paged copy through an indirect access tile whose page subscript reads the table.
#pages = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 7 >= 0, d3 >= 0, -d3 + 15 >= 0)>
#tbl = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#dst = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 1 >= 0, d2 >= 0, -d2 + 31 >= 0, d3 >= 0, -d3 + 15 >= 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @gather_pages(%cache: index, %table: index, %out: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %cv = ktdp.construct_memory_view %cache, sizes: [16, 2, 8, 16], strides: [256, 128, 16, 1] {coordinate_set = #pages, memory_space = #ktdp.memory_space<global>} : memref<16x2x8x16xf16>
    %tv = ktdp.construct_memory_view %table, sizes: [2, 4], strides: [4, 1] {coordinate_set = #tbl, memory_space = #ktdp.memory_space<global>} : memref<2x4xi32>
    %ov = ktdp.construct_memory_view %out, sizes: [2, 2, 32, 16], strides: [1024, 512, 16, 1] {coordinate_set = #dst, memory_space = #ktdp.memory_space<global>} : memref<2x2x32x16xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%s, %h, %p, %d) %cv[ind(%tv[%s, %p floordiv 8]), (%h), (%p mod 8), (%d)] {
      variables_space_set = #dst,
      variables_space_order = #id4
    } : memref<16x2x8x16xf16>, memref<2x4xi32> -> !ktdp.access_tile<2x2x32x16xindex>
    %dt = ktdp.construct_access_tile %ov[%c0, %c0, %c0, %c0] {access_tile_set = #dst, access_tile_order = #id4} : memref<2x2x32x16xf16> -> !ktdp.access_tile<2x2x32x16xindex>
    %v = ktdp.load %src : !ktdp.access_tile<2x2x32x16xindex> -> tensor<2x2x32x16xf16>
    ktdp.store %v, %dt : tensor<2x2x32x16xf16>, !ktdp.access_tile<2x2x32x16xindex>
    return
  }
}
