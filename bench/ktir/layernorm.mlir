// LayerNorm over 2304 rows of 4096 f16 features (9.4 M elements) on 32 cores: each core
// takes 72 rows in blocks of 8, computes mean and variance in f32, and applies gamma and
// beta with a linalg.generic that broadcasts them along the rows. (Benchmark kernel at
// the scale of the public KTIR examples.)
#mat = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2303 >= 0, d1 >= 0, -d1 + 4095 >= 0)>
#vec = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 4095 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 4095 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
module {
  func.func @layernorm(%x: index, %gamma: index, %beta: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c72 = arith.constant 72 : index
    %id = ktdp.get_compute_tile_id : index
    %first = arith.muli %id, %c72 : index
    %last = arith.addi %first, %c72 : index
    %xv = ktdp.construct_memory_view %x, sizes: [2304, 4096], strides: [4096, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<2304x4096xf16>
    %gv = ktdp.construct_memory_view %gamma, sizes: [1, 4096], strides: [4096, 1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<1x4096xf16>
    %bv = ktdp.construct_memory_view %beta, sizes: [1, 4096], strides: [4096, 1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<1x4096xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [2304, 4096], strides: [4096, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<2304x4096xf16>
    %gt = ktdp.construct_access_tile %gv[%c0, %c0] {access_tile_set = #vec, access_tile_order = #ord} : memref<1x4096xf16> -> !ktdp.access_tile<1x4096xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {access_tile_set = #vec, access_tile_order = #ord} : memref<1x4096xf16> -> !ktdp.access_tile<1x4096xindex>
    %g2 = ktdp.load %gt : !ktdp.access_tile<1x4096xindex> -> tensor<1x4096xf16>
    %b2 = ktdp.load %bt : !ktdp.access_tile<1x4096xindex> -> tensor<1x4096xf16>
    %gh = tensor.collapse_shape %g2 [[0, 1]] : tensor<1x4096xf16> into tensor<4096xf16>
    %bh = tensor.collapse_shape %b2 [[0, 1]] : tensor<1x4096xf16> into tensor<4096xf16>
    %g = arith.extf %gh : tensor<4096xf16> to tensor<4096xf32>
    %b = arith.extf %bh : tensor<4096xf16> to tensor<4096xf32>
    %zero = arith.constant 0.0 : f32
    %inv_n = arith.constant dense<2.44140625e-04> : tensor<8x4096xf32>
    %eps = arith.constant dense<1.0e-05> : tensor<8x4096xf32>
    scf.for %r = %first to %last step %c8 {
      %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<2304x4096xf16> -> !ktdp.access_tile<8x4096xindex>
      %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<2304x4096xf16> -> !ktdp.access_tile<8x4096xindex>
      %h = ktdp.load %xt : !ktdp.access_tile<8x4096xindex> -> tensor<8x4096xf16>
      %v = arith.extf %h : tensor<8x4096xf16> to tensor<8x4096xf32>
      %e8 = tensor.empty() : tensor<8xf32>
      %e = tensor.empty() : tensor<8x4096xf32>
      %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
      %sum = linalg.reduce { arith.addf } ins(%v : tensor<8x4096xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
      %sumb = linalg.broadcast ins(%sum : tensor<8xf32>) outs(%e : tensor<8x4096xf32>) dimensions = [1]
      %mean = arith.mulf %sumb, %inv_n : tensor<8x4096xf32>
      %d = arith.subf %v, %mean : tensor<8x4096xf32>
      %d2 = arith.mulf %d, %d : tensor<8x4096xf32>
      %ss = linalg.reduce { arith.addf } ins(%d2 : tensor<8x4096xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
      %ssb = linalg.broadcast ins(%ss : tensor<8xf32>) outs(%e : tensor<8x4096xf32>) dimensions = [1]
      %var = arith.mulf %ssb, %inv_n : tensor<8x4096xf32>
      %ve = arith.addf %var, %eps : tensor<8x4096xf32>
      %rstd = math.rsqrt %ve : tensor<8x4096xf32>
      %norm = arith.mulf %d, %rstd : tensor<8x4096xf32>
      %out = linalg.generic {indexing_maps = [#ord, #cols, #cols, #ord], iterator_types = ["parallel", "parallel"]} ins(%norm, %g, %b : tensor<8x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) outs(%e : tensor<8x4096xf32>) {
      ^bb0(%n: f32, %gi: f32, %bi: f32, %o: f32):
        %t = arith.mulf %n, %gi : f32
        %u = arith.addf %t, %bi : f32
        linalg.yield %u : f32
      } -> tensor<8x4096xf32>
      %oh = arith.truncf %out : tensor<8x4096xf32> to tensor<8x4096xf16>
      ktdp.store %oh, %yt : tensor<8x4096xf16>, !ktdp.access_tile<8x4096xindex>
    }
    return
  }
}
