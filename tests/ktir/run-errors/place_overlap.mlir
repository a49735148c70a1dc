// A placed buffer whose data is larger than its views reach, so it runs into the buffer
// of the views at 64.
// PLACE: a=0
// NPY: a <f4 80
// EXPECT-ERROR: DRAM buffer 'dst' at address 64 overlaps the buffers placed before it (buffer 'a' ends at 80)
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#h = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 3 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
func.func @f() attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %src = arith.constant 0 : index
  %dst = arith.constant 64 : index
  %xv = ktdp.construct_memory_view %src, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %yv = ktdp.construct_memory_view %dst, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  ktdp.store %a, %yt : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}
