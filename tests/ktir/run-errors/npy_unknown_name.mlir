// NAME.npy matching no buffer: an error with the closest name, not random data.
// ARGS: n=1 h=1
// NPY: xx <f4 4x8
// EXPECT-ERROR: input 'xx' (xx.npy) matches no buffer, scratchpad view or tensor argument (did you mean 'x'?)
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
func.func @scale(%x: index, %y: index, %n: index, %h: f16) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %xv = ktdp.construct_memory_view %x, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
  ktdp.store %a, %yt : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
  return
}
