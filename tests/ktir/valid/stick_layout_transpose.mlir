// Reads a 4x128 f16 host tile from a stick-major device layout [2 sticks, 4 rows, 64] and
// writes it back transposed into a row-major buffer.
module {
  func.func @unstick(%src: index, %dst: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %sv = ktdp.construct_memory_view %src, sizes: [2, 4, 64], strides: [256, 64, 1] {
      coordinate_set = affine_set<(d0, d1, d2) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 3 - d1 >= 0, d2 >= 0, 63 - d2 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<2x4x64xf16>
    %dv = ktdp.construct_memory_view %dst, sizes: [4, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<4x128xf16>
    %st = ktdp.construct_access_tile %sv[%c0, %c0, %c0] {
      access_tile_set = affine_set<(d0, d1, d2) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 3 - d1 >= 0, d2 >= 0, 63 - d2 >= 0)>,
      access_tile_order = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    } : memref<2x4x64xf16> -> !ktdp.access_tile<2x4x64xindex>
    %dt = ktdp.construct_access_tile %dv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 127 - d1 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<4x128xf16> -> !ktdp.access_tile<4x128xindex>
    %x = ktdp.load %st : !ktdp.access_tile<2x4x64xindex> -> tensor<2x4x64xf16>
    %e = tensor.empty() : tensor<4x2x64xf16>
    %t = linalg.transpose ins(%x : tensor<2x4x64xf16>) outs(%e : tensor<4x2x64xf16>) permutation = [1, 0, 2]
    %r = tensor.collapse_shape %t [[0], [1, 2]] : tensor<4x2x64xf16> into tensor<4x128xf16>
    ktdp.store %r, %dt : tensor<4x128xf16>, !ktdp.access_tile<4x128xindex>
    %back = tensor.expand_shape %r [[0], [1, 2]] output_shape [4, 2, 64] : tensor<4x128xf16> into tensor<4x2x64xf16>
    %bias = arith.constant dense<1.5> : tensor<64xf16>
    %be = tensor.empty() : tensor<4x2x64xf16>
    %bb = linalg.broadcast ins(%bias : tensor<64xf16>) outs(%be : tensor<4x2x64xf16>) dimensions = [0, 1]
    %sum = arith.addf %back, %bb : tensor<4x2x64xf16>
    return
  }
}
