// Row softmax of a 128x128 f32 matrix, 4 rows per core: max-reduce with a combiner
// region, subtract, exponentiate, sum-reduce with the shorthand form, divide.
#mat = affine_set<(d0, d1) : (d0 >= 0, -d0 + 127 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 127 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @softmax(%x: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c4 : index
    %xv = ktdp.construct_memory_view %x, sizes: [128, 128], strides: [128, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<128x128xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [128, 128], strides: [128, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<128x128xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<128x128xf32> -> !ktdp.access_tile<4x128xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<128x128xf32> -> !ktdp.access_tile<4x128xindex>
    %v = ktdp.load %xt : !ktdp.access_tile<4x128xindex> -> tensor<4x128xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %e4 = tensor.empty() : tensor<4xf32>
    %e = tensor.empty() : tensor<4x128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.reduce ins(%v : tensor<4x128xf32>) outs(%m0 : tensor<4xf32>) dimensions = [1] (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }
    %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
    %shifted = arith.subf %v, %mb : tensor<4x128xf32>
    %ex = math.exp %shifted : tensor<4x128xf32>
    %s0 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.reduce { arith.addf } ins(%ex : tensor<4x128xf32>) outs(%s0 : tensor<4xf32>) dimensions = [1]
    %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%e : tensor<4x128xf32>) dimensions = [1]
    %out = arith.divf %ex, %sb : tensor<4x128xf32>
    ktdp.store %out, %yt : tensor<4x128xf32>, !ktdp.access_tile<4x128xindex>
    return
  }
}
