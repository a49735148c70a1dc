// Two cores' scratchpads hold the two halves of a 64x64 f16 tensor; a distributed view
// stitches them into one global 64x64 view (each partition's coordinate_set is written in
// global coordinates) and core 0 copies the whole tensor to DRAM through it.
#top = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#bottom = affine_set<(d0, d1) : (d0 - 32 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#whole = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @gather_halves(%lx: index, %out: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %part0 = ktdp.construct_memory_view %lx, sizes: [32, 64], strides: [64, 1] {coordinate_set = #top, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<32x64xf16>
    %part1 = ktdp.construct_memory_view %lx, sizes: [32, 64], strides: [64, 1] {coordinate_set = #bottom, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<32x64xf16>
    %all = ktdp.construct_distributed_memory_view (%part0, %part1 : memref<32x64xf16>, memref<32x64xf16>) : memref<64x64xf16>
    %ov = ktdp.construct_memory_view %out, sizes: [64, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %src = ktdp.construct_access_tile %all[%c0, %c0] {access_tile_set = #whole, access_tile_order = #ord} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
    %dst = ktdp.construct_access_tile %ov[%c0, %c0] {access_tile_set = #whole, access_tile_order = #ord} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>
    %x = ktdp.load %src : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
    ktdp.store %x, %dst : tensor<64x64xf16>, !ktdp.access_tile<64x64xindex>
    return
  }
}
