// A paged-tensor copy: the source holds pages of 64 tokens (pages x heads x 64 x dim); a
// page table (batch x pages-per-sequence, i32) says which page holds each block of a
// sequence. The indirect access tile gathers 2 sequences x 4 heads x 256 tokens x 32.
#pages = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 511 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 63 >= 0, d3 >= 0, -d3 + 31 >= 0)>
#table = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#dense_out = affine_set<(d0, d1, d2, d3) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 3 >= 0, d2 >= 0, -d2 + 255 >= 0, d3 >= 0, -d3 + 31 >= 0)>
#vars = affine_set<(b, h, t, d) : (b >= 0, -b + 1 >= 0, h >= 0, -h + 3 >= 0, t >= 0, -t + 255 >= 0, d >= 0, -d + 31 >= 0)>
#identity4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @paged_copy(%cache: index, %tbl: index, %out: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %cv = ktdp.construct_memory_view %cache, sizes: [512, 4, 64, 32], strides: [8192, 2048, 32, 1] {coordinate_set = #pages, memory_space = #ktdp.memory_space<global>} : memref<512x4x64x32xf16>
    %tv = ktdp.construct_memory_view %tbl, sizes: [2, 4], strides: [4, 1] {coordinate_set = #table, memory_space = #ktdp.memory_space<global>} : memref<2x4xi32>
    %ov = ktdp.construct_memory_view %out, sizes: [2, 4, 256, 32], strides: [32768, 8192, 32, 1] {coordinate_set = #dense_out, memory_space = #ktdp.memory_space<global>} : memref<2x4x256x32xf16>
    %src = ktdp.construct_indirect_access_tile intermediate_variables(%b, %h, %t, %d) %cv[ind(%tv[%b, %t floordiv 64]), (%h), (%t mod 64), (%d)] {
      variables_space_set = #vars,
      variables_space_order = #identity4
    } : memref<512x4x64x32xf16>, memref<2x4xi32> -> !ktdp.access_tile<2x4x256x32xindex>
    %dst = ktdp.construct_access_tile %ov[%c0, %c0, %c0, %c0] {access_tile_set = #dense_out, access_tile_order = #identity4} : memref<2x4x256x32xf16> -> !ktdp.access_tile<2x4x256x32xindex>
    %data = ktdp.load %src : !ktdp.access_tile<2x4x256x32xindex> -> tensor<2x4x256x32xf16>
    ktdp.store %data, %dst : tensor<2x4x256x32xf16>, !ktdp.access_tile<2x4x256x32xindex>
    return
  }
}
