// RUN-ARGS: n=24
// RUN-INPUT: x = dense_views.x.npy
// RUN-EXPECT: y = dense_views.y.npy
// Inputs: x is f32 [24, 16], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py); the scalar n is 24. Expected: y = 2x - 0.5.
// Memory views without a coordinate_set, as the reference interpreter's examples write
// dense views: x's rows are the argument %n (a dynamic dimension), y's sizes are literals.
// Each view covers every point of its sizes. Three tiles each do eight rows.
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @affine_rows(%x: index, %y: index, %n: index) attributes {grid = [3]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c8 : index
    // expected-warning@+1 {{has no 'coordinate_set'}}
    %xv = ktdp.construct_memory_view %x, sizes: [%n, 16], strides: [16, 1] {memory_space = #ktdp.memory_space<global>} : memref<?x16xf32>
    // expected-warning@+1 {{has no 'coordinate_set'}}
    %yv = ktdp.construct_memory_view %y, sizes: [24, 16], strides: [16, 1] {memory_space = #ktdp.memory_space<global>} : memref<24x16xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<?x16xf32> -> !ktdp.access_tile<8x16xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<24x16xf32> -> !ktdp.access_tile<8x16xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<8x16xindex> -> tensor<8x16xf32>
    %two = arith.constant dense<2.0> : tensor<8x16xf32>
    %half = arith.constant dense<0.5> : tensor<8x16xf32>
    %d = arith.mulf %a, %two : tensor<8x16xf32>
    %b = arith.subf %d, %half : tensor<8x16xf32>
    ktdp.store %b, %yt : tensor<8x16xf32>, !ktdp.access_tile<8x16xindex>
    return
  }
}
