// RMSNorm in f16 with f32 accumulation: extend, square, mean, rsqrt, scale by a weight
// vector (linalg.mul after a broadcast), truncate back to f16.
#mat = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#vec = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @rmsnorm(%x: index, %w: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c8 : index
    %xv = ktdp.construct_memory_view %x, sizes: [256, 64], strides: [64, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<256x64xf16>
    %wv = ktdp.construct_memory_view %w, sizes: [1, 64], strides: [64, 1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<1x64xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [256, 64], strides: [64, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<256x64xf16>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>
    %wt = ktdp.construct_access_tile %wv[%c0, %c0] {access_tile_set = #vec, access_tile_order = #ord} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>
    %xh = ktdp.load %xt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %wh = ktdp.load %wt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    %xf = arith.extf %xh : tensor<8x64xf16> to tensor<8x64xf32>
    %w1 = tensor.collapse_shape %wh [[0, 1]] : tensor<1x64xf16> into tensor<64xf16>
    %wf = arith.extf %w1 : tensor<64xf16> to tensor<64xf32>
    %sq = arith.mulf %xf, %xf : tensor<8x64xf32>
    %zero = arith.constant 0.0 : f32
    %e8 = tensor.empty() : tensor<8xf32>
    %e = tensor.empty() : tensor<8x64xf32>
    %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
    %ss = linalg.reduce { arith.addf } ins(%sq : tensor<8x64xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
    %inv_n = arith.constant dense<1.5625e-02> : tensor<8xf32>
    %eps = arith.constant dense<1.0e-06> : tensor<8xf32>
    %ms = arith.mulf %ss, %inv_n : tensor<8xf32>
    %mse = arith.addf %ms, %eps : tensor<8xf32>
    %rs = math.rsqrt %mse : tensor<8xf32>
    %rsb = linalg.broadcast ins(%rs : tensor<8xf32>) outs(%e : tensor<8x64xf32>) dimensions = [1]
    %wb = linalg.broadcast ins(%wf : tensor<64xf32>) outs(%e : tensor<8x64xf32>) dimensions = [0]
    %n = arith.mulf %xf, %rsb : tensor<8x64xf32>
    %scaled = linalg.mul ins(%n, %wb : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
    %out = arith.truncf %scaled : tensor<8x64xf32> to tensor<8x64xf16>
    ktdp.store %out, %yt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
