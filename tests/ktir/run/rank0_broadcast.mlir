// RUN-INPUT: s = rank0_broadcast.s.npy
// RUN-EXPECT: y = rank0_broadcast.y.npy
// Inputs: s is f16 [1, 1], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: y is f16 [4, 32], every element s[0, 0].
// A 1x1 tile collapsed to a rank-0 tensor and broadcast over both dimensions, the shape
// lowering passes give a scalar operand.
#one = affine_set<(d0, d1) : (d0 >= 0, -d0 >= 0, d1 >= 0, -d1 >= 0)>
#out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @spread(%s: index, %y: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %sv = ktdp.construct_memory_view %s, sizes: [1, 1], strides: [1, 1] {coordinate_set = #one, memory_space = #ktdp.memory_space<global>} : memref<1x1xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [4, 32], strides: [32, 1] {coordinate_set = #out, memory_space = #ktdp.memory_space<global>} : memref<4x32xf16>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {access_tile_set = #one, access_tile_order = #id} : memref<1x1xf16> -> !ktdp.access_tile<1x1xindex>
    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #out, access_tile_order = #id} : memref<4x32xf16> -> !ktdp.access_tile<4x32xindex>
    %v = ktdp.load %st : !ktdp.access_tile<1x1xindex> -> tensor<1x1xf16>
    %v0 = tensor.collapse_shape %v [] : tensor<1x1xf16> into tensor<f16>
    %e = tensor.empty() : tensor<4x32xf16>
    %b = linalg.broadcast ins(%v0 : tensor<f16>) outs(%e : tensor<4x32xf16>) dimensions = [0, 1]
    ktdp.store %b, %yt : tensor<4x32xf16>, !ktdp.access_tile<4x32xindex>
    return
  }
}
