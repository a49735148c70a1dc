// Two functions need three scalars, one of them only through the sizes of two views: one
// error lists all three once each, with their types, instead of one error per run.
// EXPECT-ERROR: missing inputs (3)
// EXPECT-ERROR: --arg rows=VALUE (index; the sizes or strides of view '%xv' in @first depend on it)
// EXPECT-ERROR: --arg scale=VALUE (f32; an argument of @second)
// EXPECT-ERROR: --arg bias=VALUE (f16; an argument of @second)
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
func.func @first(%x: index, %rows: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %xv = ktdp.construct_memory_view %x, sizes: [%rows, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<?x8xf32>
  %xw = ktdp.construct_memory_view %x, sizes: [%rows, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<?x8xf32>
  %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<?x8xf32> -> !ktdp.access_tile<4x8xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  ktdp.store %a, %xt : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}
func.func @second(%y: index, %scale: f32, %bias: f16) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %yv = ktdp.construct_memory_view %y, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %a = ktdp.load %yt : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  %s = tensor.splat %scale : tensor<4x8xf32>
  %b = arith.mulf %a, %s : tensor<4x8xf32>
  ktdp.store %b, %yt : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}
