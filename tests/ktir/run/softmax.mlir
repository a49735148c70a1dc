// RUN-INPUT: x = softmax.x.npy
// RUN-EXPECT: y = softmax.y.npy
// Inputs: x is f32 [16, 64], uniform in [-4, 4) from numpy's default_rng (seed in
// make_expected.py). Expected: y = softmax over each row (max-subtracted).
// Four tiles each take four rows.
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @softmax_rows(%x: index, %y: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c4 : index
    %xv = ktdp.construct_memory_view %x, sizes: [16, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<16x64xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [16, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<16x64xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x64xf32> -> !ktdp.access_tile<4x64xindex>
    %yt = ktdp.construct_access_tile %yv[%r, %c0] {access_tile_set = #blk, access_tile_order = #id} : memref<16x64xf32> -> !ktdp.access_tile<4x64xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<4xf32>
    %e2 = tensor.empty() : tensor<4x64xf32>
    %lo = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.reduce { arith.maximumf } ins(%a : tensor<4x64xf32>) outs(%lo : tensor<4xf32>) dimensions = [1]
    %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e2 : tensor<4x64xf32>) dimensions = [1]
    %d = arith.subf %a, %mb : tensor<4x64xf32>
    %p = math.exp %d : tensor<4x64xf32>
    %s = linalg.reduce { arith.addf } ins(%p : tensor<4x64xf32>) outs(%z : tensor<4xf32>) dimensions = [1]
    %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%e2 : tensor<4x64xf32>) dimensions = [1]
    %q = arith.divf %p, %sb : tensor<4x64xf32>
    ktdp.store %q, %yt : tensor<4x64xf32>, !ktdp.access_tile<4x64xindex>
    return
  }
}
