// Scatter: every core writes its 4 rows of updates to the rows an index vector names
// (a store through an indirect access tile).
#dest = affine_set<(d0, d1) : (d0 >= 0, -d0 + 511 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ids = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>
#upd = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#vars = affine_set<(r, c) : (r >= 0, -r + 3 >= 0, c >= 0, -c + 63 >= 0)>
#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @scatter_rows(%dst: index, %idx: index, %u: index) attributes {grid = [16]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %r0 = arith.muli %id, %c4 : index
    %dv = ktdp.construct_memory_view %dst, sizes: [512, 64], strides: [64, 1] {coordinate_set = #dest, memory_space = #ktdp.memory_space<global>} : memref<512x64xf32>
    %iv = ktdp.construct_memory_view %idx, sizes: [64], strides: [1] {coordinate_set = #ids, memory_space = #ktdp.memory_space<global>} : memref<64xi32>
    %uv = ktdp.construct_memory_view %u, sizes: [64, 64], strides: [64, 1] {coordinate_set = #upd, memory_space = #ktdp.memory_space<global>} : memref<64x64xf32>
    %src = ktdp.construct_access_tile %uv[%r0, %c0] {access_tile_set = #tile, access_tile_order = #ord} : memref<64x64xf32> -> !ktdp.access_tile<4x64xindex>
    %x = ktdp.load %src : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf32>
    %where = ktdp.construct_indirect_access_tile intermediate_variables(%r, %c) %dv[ind(%iv[%r0 + %r]), (%c)] {variables_space_set = #vars, variables_space_order = #ord} : memref<512x64xf32>, memref<64xi32> -> !ktdp.access_tile<4x64xindex>
    ktdp.store %x, %where : tensor<4x64xf32>, !ktdp.access_tile<4x64xindex>
    return
  }
}
