// linalg.index inside a linalg.generic body, as attention kernels use it for causal masks:
// one tile loads an 8x8 block, keeps the entries on or below the diagonal (column <= row)
// and replaces the others with zero.
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @lower_triangle(%a: index, %b: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %av = ktdp.construct_memory_view %a, sizes: [8, 8], strides: [8, 1] {coordinate_set = #blk, memory_space = #ktdp.memory_space<global>} : memref<8x8xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [8, 8], strides: [8, 1] {coordinate_set = #blk, memory_space = #ktdp.memory_space<global>} : memref<8x8xf32>
    %at = ktdp.construct_access_tile %av[%c0, %c0] {access_tile_set = #blk, access_tile_order = #o} : memref<8x8xf32> -> !ktdp.access_tile<8x8xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {access_tile_set = #blk, access_tile_order = #o} : memref<8x8xf32> -> !ktdp.access_tile<8x8xindex>
    %x = ktdp.load %at : !ktdp.access_tile<8x8xindex> -> tensor<8x8xf32>
    %e = tensor.empty() : tensor<8x8xf32>
    %y = linalg.generic {indexing_maps = [#o, #o], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%v: f32, %out: f32):
      %row = linalg.index 0 : index
      %col = linalg.index 1 : index
      %keep = arith.cmpi ule, %col, %row : index
      %r = arith.select %keep, %v, %zero : f32
      linalg.yield %r : f32
    } -> tensor<8x8xf32>
    ktdp.store %y, %bt : tensor<8x8xf32>, !ktdp.access_tile<8x8xindex>
    return
  }
}
