// Embedding lookup: gather 8 rows of a 1000x128 table named by an index vector, one
// block of rows per core (the row offset is a captured SSA value).
#table = affine_set<(d0, d1) : (d0 >= 0, -d0 + 999 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#ids = affine_set<(d0) : (d0 >= 0, -d0 + 255 >= 0)>
#out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#vars = affine_set<(i, j) : (i >= 0, -i + 7 >= 0, j >= 0, -j + 127 >= 0)>
#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @embedding(%w: index, %idx: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %id = ktdp.get_compute_tile_id : index
    %base = arith.muli %id, %c8 : index
    %wv = ktdp.construct_memory_view %w, sizes: [1000, 128], strides: [128, 1] {coordinate_set = #table, memory_space = #ktdp.memory_space<global>} : memref<1000x128xbf16>
    %iv = ktdp.construct_memory_view %idx, sizes: [256], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<256xi32>
    %yv = ktdp.construct_memory_view %y, sizes: [256, 128], strides: [128, 1] {coordinate_set = #out, memory_space = #ktdp.memory_space<global>} : memref<256x128xbf16>
    %rows = ktdp.construct_indirect_access_tile intermediate_variables(%i, %j) %wv[ind(%iv[%base + %i]), (%j)] {variables_space_set = #vars, variables_space_order = #ord} : memref<1000x128xbf16>, memref<256xi32> -> !ktdp.access_tile<8x128xindex>
    %dst = ktdp.construct_access_tile %yv[%base, %c0] {access_tile_set = #tile, access_tile_order = #ord} : memref<256x128xbf16> -> !ktdp.access_tile<8x128xindex>
    %x = ktdp.load %rows : !ktdp.access_tile<8x128xindex> -> tensor<8x128xbf16>
    ktdp.store %x, %dst : tensor<8x128xbf16>, !ktdp.access_tile<8x128xindex>
    return
  }
}
