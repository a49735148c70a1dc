// RUN-ARGS: n=24
// RUN-INPUT: x = view_ssa_sizes.x.npy
// RUN-EXPECT: y = view_ssa_sizes.y.npy
// Inputs: x is f32 [24, 16], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py); the scalar n is 24. Expected: y = x + 1.
// construct_memory_view with sizes given as SSA values: over x, a dynamic dimension from
// the argument %n; over y, %n and an arith.constant standing for the static dimensions of
// memref<24x16xf32> (checked at run time to fit them). Three tiles each do eight rows.
#all = affine_set<(d0, d1)[n] : (d0 >= 0, -d0 + n - 1 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#y24 = affine_set<(d0, d1) : (d0 >= 0, -d0 + 23 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @plus_one(%x: index, %y: index, %n: index) attributes {grid = [3]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c8 : index
    %xv = ktdp.construct_memory_view %x, sizes: [%n, 16], strides: [%c16, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<?x16xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [%n, %c16], strides: [16, 1] {coordinate_set = #y24, memory_space = #ktdp.memory_space<global>} : memref<24x16xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<?x16xf32> -> !ktdp.access_tile<8x16xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<24x16xf32> -> !ktdp.access_tile<8x16xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<8x16xindex> -> tensor<8x16xf32>
    %one = arith.constant dense<1.0> : tensor<8x16xf32>
    %b = arith.addf %a, %one : tensor<8x16xf32>
    ktdp.store %b, %yt : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    return
  }
}
