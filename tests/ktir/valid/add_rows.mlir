// Elementwise add of two 64x64 f16 matrices, 16 rows per core over a grid of 4.
module {
  func.func @add_rows(%a: index, %b: index, %c: index) attributes {grid = [4]} {
    %rows = arith.constant 16 : index
    %zero = arith.constant 0 : index
    %id = ktdp.get_compute_tile_id : index
    %row0 = arith.muli %id, %rows : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %at = ktdp.construct_access_tile %av[%row0, %zero] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %bt = ktdp.construct_access_tile %bv[%row0, %zero] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %ct = ktdp.construct_access_tile %cv[%row0, %zero] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<64x64xf16> -> !ktdp.access_tile<16x64xindex>
    %x = ktdp.load %at : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %y = ktdp.load %bt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %z = arith.addf %x, %y : tensor<16x64xf16>
    ktdp.store %z, %ct : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
