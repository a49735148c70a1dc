// ARGS: rows=16
// Memory views whose sizes are SSA values although the memref type has static dimensions,
// as the RFC's paged tensor copy writes them: the dialect checks only the number of sizes
// and the rank, so the program verifies, and it is the runner's job to check that the
// values fit the static dimensions. Each of two tiles copies eight rows of 64.
#src = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#half = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @copy_rows(%in: index, %out: index, %rows: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %t = ktdp.get_compute_tile_id : index
    %r0 = arith.muli %t, %c8 : index
    %iv = ktdp.construct_memory_view %in, sizes: [%rows, %c64], strides: [64, 1] {coordinate_set = #src, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
    %ov = ktdp.construct_memory_view %out, sizes: [%rows, 64], strides: [%c64, 1] {coordinate_set = #src, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
    %it = ktdp.construct_access_tile %iv[%r0, %c0] {access_tile_set = #half, access_tile_order = #o} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
    %ot = ktdp.construct_access_tile %ov[%r0, %c0] {access_tile_set = #half, access_tile_order = #o} : memref<16x64xf16> -> !ktdp.access_tile<8x64xindex>
    %d = ktdp.load %it : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    ktdp.store %d, %ot : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
