// Module aliases, the older memory-space spelling and an access-tile type without its prefix.
#full = affine_set<(d0, d1) : (d0 >= 0, 31 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>
#half = affine_set<(d0, d1) : (d0 >= 0, 15 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>
#identity = affine_map<(d0, d1) -> (d0, d1)>

func.func @scale_halves(%src: index, %dst: index) attributes {grid = [2]} {
  %c16 = arith.constant 16 : index
  %c0 = arith.constant 0 : index
  %two = arith.constant dense<2.0> : tensor<16x128xf32>
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c16 : index
  %sv = ktdp.construct_memory_view %src, sizes: [32, 128], strides: [128, 1] {coordinate_set = #full, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x128xf32>
  %dv = ktdp.construct_memory_view %dst, sizes: [32, 128], strides: [128, 1] {coordinate_set = #full, memory_space = #ktdp.spyre_memory_space<HBM>} : memref<32x128xf32>
  %st = ktdp.construct_access_tile %sv[%r, %c0] {access_tile_set = #half, access_tile_order = #identity} : memref<32x128xf32> -> <16x128xindex>
  %dt = ktdp.construct_access_tile %dv[%r, %c0] {access_tile_set = #half, access_tile_order = #identity} : memref<32x128xf32> -> <16x128xindex>
  %x = ktdp.load %st : <16x128xindex> -> tensor<16x128xf32>
  %y = arith.mulf %x, %two : tensor<16x128xf32>
  %e = math.exp %y : tensor<16x128xf32>
  ktdp.store %e, %dt : tensor<16x128xf32>, <16x128xindex>
  return
}
