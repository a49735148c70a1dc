// RUN-INPUT: x = elementwise.x.npy
// RUN-INPUT: y = elementwise.y.npy
// RUN-EXPECT: z = elementwise.z.npy
// Inputs: f16 [32, 64] each, uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: z = exp(x) * y + x, every step rounded to f16.
// Four tiles each take eight rows.
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows8 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @ew(%x: index, %y: index, %z: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c8 : index
    %xv = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %yv = ktdp.construct_memory_view %y, sizes: [32, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %zv = ktdp.construct_memory_view %z, sizes: [32, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<32x64xf16>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows8, access_tile_order = #id} : memref<32x64xf16> -> !ktdp.access_tile<8x64xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #rows8, access_tile_order = #id} : memref<32x64xf16> -> !ktdp.access_tile<8x64xindex>
    %zt = ktdp.construct_access_tile %zv[%r, %c0] {access_tile_set = #rows8, access_tile_order = #id} : memref<32x64xf16> -> !ktdp.access_tile<8x64xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %b = ktdp.load %yt : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>
    %e = math.exp %a : tensor<8x64xf16>
    %p = arith.mulf %e, %b : tensor<8x64xf16>
    %s = arith.addf %p, %a : tensor<8x64xf16>
    ktdp.store %s, %zt : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
