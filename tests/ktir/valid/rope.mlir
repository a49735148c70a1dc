// Rotary position embedding on 4 tokens x 64 features per core: split the features in
// halves, rotate with cos/sin tables, and reassemble with tensor.insert_slice.
#x = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#tab = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#xt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#tt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @rope(%q: index, %cos: index, %sin: index, %out: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %t0 = arith.muli %id, %c4 : index
    %qv = ktdp.construct_memory_view %q, sizes: [128, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<128x64xf32>
    %cv = ktdp.construct_memory_view %cos, sizes: [128, 32], strides: [32, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<128x32xf32>
    %sv = ktdp.construct_memory_view %sin, sizes: [128, 32], strides: [32, 1] {coordinate_set = #tab, memory_space = #ktdp.memory_space<global>} : memref<128x32xf32>
    %ov = ktdp.construct_memory_view %out, sizes: [128, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<128x64xf32>
    %qt = ktdp.construct_access_tile %qv[%t0, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<128x64xf32> -> !ktdp.access_tile<4x64xindex>
    %ct = ktdp.construct_access_tile %cv[%t0, %c0] {access_tile_set = #tt, access_tile_order = #ord} : memref<128x32xf32> -> !ktdp.access_tile<4x32xindex>
    %st = ktdp.construct_access_tile %sv[%t0, %c0] {access_tile_set = #tt, access_tile_order = #ord} : memref<128x32xf32> -> !ktdp.access_tile<4x32xindex>
    %ot = ktdp.construct_access_tile %ov[%t0, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<128x64xf32> -> !ktdp.access_tile<4x64xindex>
    %x = ktdp.load %qt : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf32>
    %c = ktdp.load %ct : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf32>
    %s = ktdp.load %st : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf32>
    %x1 = tensor.extract_slice %x[0, 0] [4, 32] [1, 1] : tensor<4x64xf32> to tensor<4x32xf32>
    %x2 = tensor.extract_slice %x[0, 32] [4, 32] [1, 1] : tensor<4x64xf32> to tensor<4x32xf32>
    %a = arith.mulf %x1, %c : tensor<4x32xf32>
    %b = arith.mulf %x2, %s : tensor<4x32xf32>
    %lo = arith.subf %a, %b : tensor<4x32xf32>
    %d = arith.mulf %x2, %c : tensor<4x32xf32>
    %f = arith.mulf %x1, %s : tensor<4x32xf32>
    %hi = arith.addf %d, %f : tensor<4x32xf32>
    %e = tensor.empty() : tensor<4x64xf32>
    %y1 = tensor.insert_slice %lo into %e[0, 0] [4, 32] [1, 1] : tensor<4x32xf32> into tensor<4x64xf32>
    %y = tensor.insert_slice %hi into %y1[0, 32] [4, 32] [1, 1] : tensor<4x32xf32> into tensor<4x64xf32>
    ktdp.store %y, %ot : tensor<4x64xf32>, !ktdp.access_tile<4x64xindex>
    return
  }
}
