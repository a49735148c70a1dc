// Scaled dot-product attention for one head: each core takes 16 queries, computes
// Q K^T with linalg.matmul_transpose_b, scales, applies a row softmax and multiplies by V.
#q = affine_set<(d0, d1) : (d0 >= 0, -d0 + 511 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#kv = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#qt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @sdpa(%qa: index, %ka: index, %va: index, %oa: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c16 : index
    %qv = ktdp.construct_memory_view %qa, sizes: [512, 64], strides: [64, 1] {coordinate_set = #q, memory_space = #ktdp.memory_space<global>} : memref<512x64xf16>
    %kv = ktdp.construct_memory_view %ka, sizes: [128, 64], strides: [64, 1] {coordinate_set = #kv, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
    %vv = ktdp.construct_memory_view %va, sizes: [128, 64], strides: [64, 1] {coordinate_set = #kv, memory_space = #ktdp.memory_space<global>} : memref<128x64xf16>
    %ov = ktdp.construct_memory_view %oa, sizes: [512, 64], strides: [64, 1] {coordinate_set = #q, memory_space = #ktdp.memory_space<global>} : memref<512x64xf16>
    %qtile = ktdp.construct_access_tile %qv[%r, %c0] {access_tile_set = #qt, access_tile_order = #ord} : memref<512x64xf16> -> !ktdp.access_tile<16x64xindex>
    %ktile = ktdp.construct_access_tile %kv[%c0, %c0] {access_tile_set = #kv, access_tile_order = #ord} : memref<128x64xf16> -> !ktdp.access_tile<128x64xindex>
    %vtile = ktdp.construct_access_tile %vv[%c0, %c0] {access_tile_set = #kv, access_tile_order = #ord} : memref<128x64xf16> -> !ktdp.access_tile<128x64xindex>
    %otile = ktdp.construct_access_tile %ov[%r, %c0] {access_tile_set = #qt, access_tile_order = #ord} : memref<512x64xf16> -> !ktdp.access_tile<16x64xindex>
    %qd = ktdp.load %qtile : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
    %kd = ktdp.load %ktile : !ktdp.access_tile<128x64xindex> -> tensor<128x64xf16>
    %vd = ktdp.load %vtile : !ktdp.access_tile<128x64xindex> -> tensor<128x64xf16>
    %zero = arith.constant 0.0 : f16
    %es = tensor.empty() : tensor<16x128xf16>
    %s0 = linalg.fill ins(%zero : f16) outs(%es : tensor<16x128xf16>) -> tensor<16x128xf16>
    %scores = linalg.matmul_transpose_b ins(%qd, %kd : tensor<16x64xf16>, tensor<128x64xf16>) outs(%s0 : tensor<16x128xf16>) -> tensor<16x128xf16>
    %scale = arith.constant dense<0.125> : tensor<16x128xf16>
    %scaled = arith.mulf %scores, %scale : tensor<16x128xf16>
    %ninf = arith.constant 0xFC00 : f16
    %e16 = tensor.empty() : tensor<16xf16>
    %m0 = linalg.fill ins(%ninf : f16) outs(%e16 : tensor<16xf16>) -> tensor<16xf16>
    %m = linalg.reduce { arith.maximumf } ins(%scaled : tensor<16x128xf16>) outs(%m0 : tensor<16xf16>) dimensions = [1]
    %mb = linalg.broadcast ins(%m : tensor<16xf16>) outs(%es : tensor<16x128xf16>) dimensions = [1]
    %sh = arith.subf %scaled, %mb : tensor<16x128xf16>
    %p = math.exp %sh : tensor<16x128xf16>
    %z16 = linalg.fill ins(%zero : f16) outs(%e16 : tensor<16xf16>) -> tensor<16xf16>
    %l = linalg.reduce { arith.addf } ins(%p : tensor<16x128xf16>) outs(%z16 : tensor<16xf16>) dimensions = [1]
    %lb = linalg.broadcast ins(%l : tensor<16xf16>) outs(%es : tensor<16x128xf16>) dimensions = [1]
    %pn = arith.divf %p, %lb : tensor<16x128xf16>
    %eo = tensor.empty() : tensor<16x64xf16>
    %o0 = linalg.fill ins(%zero : f16) outs(%eo : tensor<16x64xf16>) -> tensor<16x64xf16>
    %o = linalg.matmul ins(%pn, %vd : tensor<16x128xf16>, tensor<128x64xf16>) outs(%o0 : tensor<16x64xf16>) -> tensor<16x64xf16>
    ktdp.store %o, %otile : tensor<16x64xf16>, !ktdp.access_tile<16x64xindex>
    return
  }
}
