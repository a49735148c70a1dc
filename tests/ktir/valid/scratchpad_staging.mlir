// Stage a block through the executing core's own scratchpad (ct_local without ct_id):
// DRAM -> scratchpad -> compute -> DRAM.
#g = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#l = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @stage(%a: index, %lx: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c8 : index
    %gv = ktdp.construct_memory_view %a, sizes: [256, 64], strides: [64, 1] {coordinate_set = #g, memory_space = #ktdp.memory_space<global>} : memref<256x64xf16>
    %lv = ktdp.construct_memory_view %lx, sizes: [8, 64], strides: [64, 1] {coordinate_set = #l, memory_space = #ktdp.memory_space<ct_local>} : memref<8x64xf16, #ktdp.memory_space<ct_local>>
    %gt = ktdp.construct_access_tile %gv[%r, %c0] {access_tile_set = #l, access_tile_order = #o} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>
    %lt = ktdp.construct_access_tile %lv[%c0, %c0] {access_tile_set = #l, access_tile_order = #o} : memref<8x64xf16, #ktdp.memory_space<ct_local>> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %gt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    ktdp.store %x, %lt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    %y = ktdp.load %lt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %z = math.exp %y : tensor<8x64xf16>
    ktdp.store %z, %gt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
