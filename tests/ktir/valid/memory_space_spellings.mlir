// Both memory-space spellings: the old #ktdp.spyre_memory_space<HBM|LX[, core = N]> and
// the new #ktdp.memory_space<global|ct_local[, ct_id = N]>, on views and memref types.
#m = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
#t = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @spaces(%dram: index, %lx: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %g = ktdp.construct_memory_view %dram, sizes: [256], strides: [1] {coordinate_set = #m, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<256xf16, #ktdp.spyre_memory_space<HBM>>
    %mine = ktdp.construct_memory_view %lx, sizes: [256], strides: [1] {coordinate_set = #m, memory_space = #ktdp.spyre_memory_space<LX>} : memref<256xf16>
    %other = ktdp.construct_memory_view %lx, sizes: [256], strides: [1] {coordinate_set = #m, memory_space = #ktdp.spyre_memory_space<LX, core = 3>} : memref<256xf16>
    %new = ktdp.construct_memory_view %lx, sizes: [256], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<ct_local>} : memref<256xf16, #ktdp.memory_space<ct_local>>
    %gt = ktdp.construct_access_tile %g[%c0] {access_tile_set = #t, access_tile_order = #o} : memref<256xf16, #ktdp.spyre_memory_space<HBM>> -> !ktdp.access_tile<256xindex>
    %mt = ktdp.construct_access_tile %mine[%c0] {access_tile_set = #t, access_tile_order = #o} : memref<256xf16> -> !ktdp.access_tile<256xindex>
    %ot = ktdp.construct_access_tile %other[%c0] {access_tile_set = #t, access_tile_order = #o} : memref<256xf16> -> !ktdp.access_tile<256xindex>
    %nt = ktdp.construct_access_tile %new[%c0] {access_tile_set = #t, access_tile_order = #o} : memref<256xf16, #ktdp.memory_space<ct_local>> -> !ktdp.access_tile<256xindex>
    %x = ktdp.load %gt : !ktdp.access_tile<256xindex> -> tensor<256xf16>
    %y = ktdp.load %ot : !ktdp.access_tile<256xindex> -> tensor<256xf16>
    %s = arith.addf %x, %y : tensor<256xf16>
    ktdp.store %s, %mt : tensor<256xf16>, !ktdp.access_tile<256xindex>
    ktdp.store %s, %nt : tensor<256xf16>, !ktdp.access_tile<256xindex>
    return
  }
}
