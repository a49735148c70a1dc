// LayerNorm over rows of 128 (f32), 4 rows per core, with gamma and beta applied by a
// linalg.generic that broadcasts them along the rows through its indexing maps.
#mat = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#vec = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 127 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
module {
  func.func @layernorm(%x: index, %gamma: index, %beta: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c4 : index
    %xv = ktdp.construct_memory_view %x, sizes: [128, 128], strides: [128, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<128x128xf32>
    %gv = ktdp.construct_memory_view %gamma, sizes: [1, 128], strides: [128, 1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<1x128xf32>
    %bv = ktdp.construct_memory_view %beta, sizes: [1, 128], strides: [128, 1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<1x128xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [128, 128], strides: [128, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<128x128xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<128x128xf32> -> !ktdp.access_tile<4x128xindex>
    %gt = ktdp.construct_access_tile %gv[%c0, %c0] {access_tile_set = #vec, access_tile_order = #ord} : memref<1x128xf32> -> !ktdp.access_tile<1x128xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {access_tile_set = #vec, access_tile_order = #ord} : memref<1x128xf32> -> !ktdp.access_tile<1x128xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<128x128xf32> -> !ktdp.access_tile<4x128xindex>
    %v = ktdp.load %xt : !ktdp.access_tile<4x128xindex> -> tensor<4x128xf32>
    %g2 = ktdp.load %gt : !ktdp.access_tile<1x128xindex> -> tensor<1x128xf32>
    %b2 = ktdp.load %bt : !ktdp.access_tile<1x128xindex> -> tensor<1x128xf32>
    %g = tensor.collapse_shape %g2 [[0, 1]] : tensor<1x128xf32> into tensor<128xf32>
    %b = tensor.collapse_shape %b2 [[0, 1]] : tensor<1x128xf32> into tensor<128xf32>
    %zero = arith.constant 0.0 : f32
    %inv_n = arith.constant dense<7.8125e-03> : tensor<4x128xf32>
    %eps = arith.constant dense<1.0e-05> : tensor<4x128xf32>
    %e4 = tensor.empty() : tensor<4xf32>
    %e = tensor.empty() : tensor<4x128xf32>
    %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
    %sum = linalg.reduce { arith.addf } ins(%v : tensor<4x128xf32>) outs(%z4 : tensor<4xf32>) dimensions = [1]
    %sumb = linalg.broadcast ins(%sum : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
    %mean = arith.mulf %sumb, %inv_n : tensor<4x128xf32>
    %d = arith.subf %v, %mean : tensor<4x128xf32>
    %d2 = arith.mulf %d, %d : tensor<4x128xf32>
    %ss = linalg.reduce { arith.addf } ins(%d2 : tensor<4x128xf32>) outs(%z4 : tensor<4xf32>) dimensions = [1]
    %ssb = linalg.broadcast ins(%ss : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
    %var = arith.mulf %ssb, %inv_n : tensor<4x128xf32>
    %ve = arith.addf %var, %eps : tensor<4x128xf32>
    %rstd = math.rsqrt %ve : tensor<4x128xf32>
    %norm = arith.mulf %d, %rstd : tensor<4x128xf32>
    %out = linalg.generic {indexing_maps = [#ord, #cols, #cols, #ord], iterator_types = ["parallel", "parallel"]} ins(%norm, %g, %b : tensor<4x128xf32>, tensor<128xf32>, tensor<128xf32>) outs(%e : tensor<4x128xf32>) {
    ^bb0(%n: f32, %gi: f32, %bi: f32, %o: f32):
      %t = arith.mulf %n, %gi : f32
      %u = arith.addf %t, %bi : f32
      linalg.yield %u : f32
    } -> tensor<4x128xf32>
    ktdp.store %out, %yt : tensor<4x128xf32>, !ktdp.access_tile<4x128xindex>
    return
  }
}
