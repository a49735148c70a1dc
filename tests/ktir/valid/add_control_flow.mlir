// Elementwise add over a 128x64 f16 matrix. Each of 4 cores walks its 32 rows in blocks of
// 8 with scf.for; core 0 then writes a block of zeros into the output's first rows.
#whole = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#block = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rowmajor = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @add_loop(%a: index, %b: index, %c: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %id = ktdp.get_compute_tile_id : index
    %first = arith.muli %id, %c32 : index
    %last = arith.addi %first, %c32 : index
    %av = ktdp.construct_memory_view %a, sizes: [128, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [128, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [128, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
    scf.for %r = %first to %last step %c8 {
      %at = ktdp.construct_access_tile %av[%r, %c0] {access_tile_set = #block, access_tile_order = #rowmajor} : memref<128x64xf16> -> !ktdp.access_tile<8x64xindex>
      %bt = ktdp.construct_access_tile %bv[%r, %c0] {access_tile_set = #block, access_tile_order = #rowmajor} : memref<128x64xf16> -> !ktdp.access_tile<8x64xindex>
      %ct = ktdp.construct_access_tile %cv[%r, %c0] {access_tile_set = #block, access_tile_order = #rowmajor} : memref<128x64xf16> -> !ktdp.access_tile<8x64xindex>
      %x = ktdp.load %at : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
      %y = ktdp.load %bt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
      %s = arith.addf %x, %y : tensor<8x64xf16>
      ktdp.store %s, %ct : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    }
    %is_first = arith.cmpi eq, %id, %c0 : index
    scf.if %is_first {
      %zeros = arith.constant dense<0.0> : tensor<8x64xf16>
      %zt = ktdp.construct_access_tile %cv[%c0, %c0] {access_tile_set = #block, access_tile_order = #rowmajor} : memref<128x64xf16> -> !ktdp.access_tile<8x64xindex>
      ktdp.store %zeros, %zt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    }
    return
  }
}
