// Rotary position embedding of 32768 rows (2048 tokens x 16 heads) of 128 f16 features
// on 32 cores: each core takes 1024 rows in blocks of 64, splits the features in halves,
// rotates them with f16 cos/sin tables and reassembles them with tensor.insert_slice.
// (Benchmark kernel at the scale of the public KTIR examples.)
#x = affine_set<(d0, d1) : (d0 >= 0, -d0 + 32767 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 32767 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#xt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#tt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @rope(%q: index, %cos: index, %sin: index, %out: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %id = ktdp.get_compute_tile_id : index
    %first = arith.muli %id, %c1024 : index
    %last = arith.addi %first, %c1024 : index
    %qv = ktdp.construct_memory_view %q, sizes: [32768, 128], strides: [128, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<32768x128xf16>
    %cv = ktdp.construct_memory_view %cos, sizes: [32768, 64], strides: [64, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<32768x64xf16>
    %sv = ktdp.construct_memory_view %sin, sizes: [32768, 64], strides: [64, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<32768x64xf16>
    %ov = ktdp.construct_memory_view %out, sizes: [32768, 128], strides: [128, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<32768x128xf16>
    scf.for %t0 = %first to %last step %c64 {
      %qt = ktdp.construct_access_tile %qv[%t0, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<32768x128xf16> -> !ktdp.access_tile<64x128xindex>
      %ct = ktdp.construct_access_tile %cv[%t0, %c0] {access_tile_set = #tt, access_tile_order = #ord} : memref<32768x64xf16> -> !ktdp.access_tile<64x64xindex>
      %st = ktdp.construct_access_tile %sv[%t0, %c0] {access_tile_set = #tt, access_tile_order = #ord} : memref<32768x64xf16> -> !ktdp.access_tile<64x64xindex>
      %ot = ktdp.construct_access_tile %ov[%t0, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<32768x128xf16> -> !ktdp.access_tile<64x128xindex>
      %x = ktdp.load %qt : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>
      %c = ktdp.load %ct : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
      %s = ktdp.load %st : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>
      %x1 = tensor.extract_slice %x[0, 0] [64, 64] [1, 1] : tensor<64x128xf16> to tensor<64x64xf16>
      %x2 = tensor.extract_slice %x[0, 64] [64, 64] [1, 1] : tensor<64x128xf16> to tensor<64x64xf16>
      %a = arith.mulf %x1, %c : tensor<64x64xf16>
      %b = arith.mulf %x2, %s : tensor<64x64xf16>
      %lo = arith.subf %a, %b : tensor<64x64xf16>
      %d = arith.mulf %x2, %c : tensor<64x64xf16>
      %f = arith.mulf %x1, %s : tensor<64x64xf16>
      %hi = arith.addf %d, %f : tensor<64x64xf16>
      %e = tensor.empty() : tensor<64x128xf16>
      %y1 = tensor.insert_slice %lo into %e[0, 0] [64, 64] [1, 1] : tensor<64x64xf16> into tensor<64x128xf16>
      %y = tensor.insert_slice %hi into %y1[0, 64] [64, 64] [1, 1] : tensor<64x64xf16> into tensor<64x128xf16>
      ktdp.store %y, %ot : tensor<64x128xf16>, !ktdp.access_tile<64x128xindex>
    }
    return
  }
}
