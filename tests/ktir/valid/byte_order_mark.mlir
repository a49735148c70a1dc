// Saved with a UTF-8 byte order mark, as some editors do: the mark is skipped, not
// reported as a character. One tile copies eight values.
#eight = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @copy8(%src: index, %dst: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %sv = ktdp.construct_memory_view %src, sizes: [8], strides: [1] {coordinate_set = #eight, memory_space = #ktdp.memory_space<global>} : memref<8xf32>
    %dv = ktdp.construct_memory_view %dst, sizes: [8], strides: [1] {coordinate_set = #eight, memory_space = #ktdp.memory_space<global>} : memref<8xf32>
    %st = ktdp.construct_access_tile %sv[%c0] {access_tile_set = #eight, access_tile_order = #o} : memref<8xf32> -> !ktdp.access_tile<8xindex>
    %dt = ktdp.construct_access_tile %dv[%c0] {access_tile_set = #eight, access_tile_order = #o} : memref<8xf32> -> !ktdp.access_tile<8xindex>
    %x = ktdp.load %st : !ktdp.access_tile<8xindex> -> tensor<8xf32>
    ktdp.store %x, %dt : tensor<8xf32>, !ktdp.access_tile<8xindex>
    return
  }
}
