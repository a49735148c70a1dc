// Row softmax of a 4096x1024 f16 matrix on 32 cores: each core takes 128 rows in blocks
// of 16, widens them to f32, subtracts the row max, exponentiates, divides by the row
// sum and stores f16. (Benchmark kernel at the scale of the public KTIR examples.)
#mat = affine_set<(d0, d1) : (d0 >= 0, -d0 + 4095 >= 0, d1 >= 0, -d1 + 1023 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 1023 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @softmax(%x: index, %y: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %id = ktdp.get_compute_tile_id : index
    %first = arith.muli %id, %c128 : index
    %last = arith.addi %first, %c128 : index
    %xv = ktdp.construct_memory_view %x, sizes: [4096, 1024], strides: [1024, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<4096x1024xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [4096, 1024], strides: [1024, 1] {coordinate_set = #mat, memory_space = #ktdp.memory_space<global>} : memref<4096x1024xf16>
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    scf.for %r = %first to %last step %c16 {
      %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<4096x1024xf16> -> !ktdp.access_tile<16x1024xindex>
      %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows, access_tile_order = #ord} : memref<4096x1024xf16> -> !ktdp.access_tile<16x1024xindex>
      %h = ktdp.load %xt : !ktdp.access_tile<16x1024xindex> -> tensor<16x1024xf16>
      %v = arith.extf %h : tensor<16x1024xf16> to tensor<16x1024xf32>
      %e16 = tensor.empty() : tensor<16xf32>
      %e = tensor.empty() : tensor<16x1024xf32>
      %m0 = linalg.fill ins(%ninf : f32) outs(%e16 : tensor<16xf32>) -> tensor<16xf32>
      %m = linalg.reduce ins(%v : tensor<16x1024xf32>) outs(%m0 : tensor<16xf32>) dimensions = [1] (%in: f32, %acc: f32) {
        %mx = arith.maximumf %in, %acc : f32
        linalg.yield %mx : f32
      }
      %mb = linalg.broadcast ins(%m : tensor<16xf32>) outs(%e : tensor<16x1024xf32>) dimensions = [1]
      %shifted = arith.subf %v, %mb : tensor<16x1024xf32>
      %ex = math.exp %shifted : tensor<16x1024xf32>
      %s0 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<16xf32>) -> tensor<16xf32>
      %s = linalg.reduce { arith.addf } ins(%ex : tensor<16x1024xf32>) outs(%s0 : tensor<16xf32>) dimensions = [1]
      %sb = linalg.broadcast ins(%s : tensor<16xf32>) outs(%e : tensor<16x1024xf32>) dimensions = [1]
      %out = arith.divf %ex, %sb : tensor<16x1024xf32>
      %o = arith.truncf %out : tensor<16x1024xf32> to tensor<16x1024xf16>
      ktdp.store %o, %yt : tensor<16x1024xf16>, !ktdp.access_tile<16x1024xindex>
    }
    return
  }
}
