// SwiGLU feed-forward block for 8 tokens per core: gate = x W1, up = x W3,
// h = silu(gate) * up with silu(a) = a / (1 + exp(-a)), y = h W2.
#x = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#w_in = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#w_out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#xt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @swiglu(%xa: index, %w1a: index, %w3a: index, %w2a: index, %ya: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c8 : index
    %xv = ktdp.construct_memory_view %xa, sizes: [256, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<256x64xbf16>
    %w1v = ktdp.construct_memory_view %w1a, sizes: [64, 128], strides: [128, 1] {coordinate_set = #w_in, memory_space = #ktdp.memory_space<global>} : memref<64x128xbf16>
    %w3v = ktdp.construct_memory_view %w3a, sizes: [64, 128], strides: [128, 1] {coordinate_set = #w_in, memory_space = #ktdp.memory_space<global>} : memref<64x128xbf16>
    %w2v = ktdp.construct_memory_view %w2a, sizes: [128, 64], strides: [64, 1] {coordinate_set = #w_out, memory_space = #ktdp.memory_space<global>} : memref<128x64xbf16>
    %yv = ktdp.construct_memory_view %ya, sizes: [256, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<256x64xbf16>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<256x64xbf16> -> !ktdp.access_tile<8x64xindex>
    %w1t = ktdp.construct_access_tile %w1v[%c0, %c0] {access_tile_set = #w_in, access_tile_order = #ord} : memref<64x128xbf16> -> !ktdp.access_tile<64x128xindex>
    %w3t = ktdp.construct_access_tile %w3v[%c0, %c0] {access_tile_set = #w_in, access_tile_order = #ord} : memref<64x128xbf16> -> !ktdp.access_tile<64x128xindex>
    %w2t = ktdp.construct_access_tile %w2v[%c0, %c0] {access_tile_set = #w_out, access_tile_order = #ord} : memref<128x64xbf16> -> !ktdp.access_tile<128x64xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #xt, access_tile_order = #ord} : memref<256x64xbf16> -> !ktdp.access_tile<8x64xindex>
    %x = ktdp.load %xt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xbf16>
    %w1 = ktdp.load %w1t : !ktdp.access_tile<64x128xindex> -> tensor<64x128xbf16>
    %w3 = ktdp.load %w3t : !ktdp.access_tile<64x128xindex> -> tensor<64x128xbf16>
    %w2 = ktdp.load %w2t : !ktdp.access_tile<128x64xindex> -> tensor<128x64xbf16>
    %zero = arith.constant 0.0 : bf16
    %eh = tensor.empty() : tensor<8x128xbf16>
    %h0 = linalg.fill ins(%zero : bf16) outs(%eh : tensor<8x128xbf16>) -> tensor<8x128xbf16>
    %gate = linalg.matmul ins(%x, %w1 : tensor<8x64xbf16>, tensor<64x128xbf16>) outs(%h0 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
    %up = linalg.matmul ins(%x, %w3 : tensor<8x64xbf16>, tensor<64x128xbf16>) outs(%h0 : tensor<8x128xbf16>) -> tensor<8x128xbf16>
    %ng = arith.negf %gate : tensor<8x128xbf16>
    %en = math.exp %ng : tensor<8x128xbf16>
    %one = arith.constant dense<1.0> : tensor<8x128xbf16>
    %den = arith.addf %en, %one : tensor<8x128xbf16>
    %silu = arith.divf %gate, %den : tensor<8x128xbf16>
    %h = arith.mulf %silu, %up : tensor<8x128xbf16>
    %ey = tensor.empty() : tensor<8x64xbf16>
    %y0 = linalg.fill ins(%zero : bf16) outs(%ey : tensor<8x64xbf16>) -> tensor<8x64xbf16>
    %y = linalg.matmul ins(%h, %w2 : tensor<8x128xbf16>, tensor<128x64xbf16>) outs(%y0 : tensor<8x64xbf16>) -> tensor<8x64xbf16>
    ktdp.store %y, %yt : tensor<8x64xbf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
