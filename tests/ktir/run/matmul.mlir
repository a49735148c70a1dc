// RUN-INPUT: a = matmul.a.npy
// RUN-INPUT: b = matmul.b.npy
// RUN-EXPECT: c = matmul.c.npy
// Inputs: a is f32 [32, 48], b is f32 [48, 16], uniform in [-1, 1) from numpy's
// default_rng (seed in make_expected.py). Expected: c = a @ b. Two tiles each compute
// sixteen rows, accumulating over K in two steps of 24 with scf.for.
#aset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 47 >= 0)>
#bset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 47 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#cset = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#ablk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 23 >= 0)>
#bblk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 23 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#cblk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @mm(%a: index, %b: index, %c: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c24 = arith.constant 24 : index
    %c48 = arith.constant 48 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c16 : index
    %av = ktdp.construct_memory_view %a, sizes: [32, 48], strides: [48, 1] {coordinate_set = #aset, memory_space = #ktdp.memory_space<global>} : memref<32x48xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [48, 16], strides: [16, 1] {coordinate_set = #bset, memory_space = #ktdp.memory_space<global>} : memref<48x16xf32>
    %cv = ktdp.construct_memory_view %c, sizes: [32, 16], strides: [16, 1] {coordinate_set = #cset, memory_space = #ktdp.memory_space<global>} : memref<32x16xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16x16xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %acc = scf.for %k = %c0 to %c48 step %c24 iter_args(%s = %init) -> (tensor<16x16xf32>) {
      %at = ktdp.construct_access_tile %av[%r, %k] {access_tile_set = #ablk, access_tile_order = #id} : memref<32x48xf32> -> !ktdp.access_tile<16x24xindex>
      %bt = ktdp.construct_access_tile %bv[%k, %c0] {access_tile_set = #bblk, access_tile_order = #id} : memref<48x16xf32> -> !ktdp.access_tile<24x16xindex>
      %x = ktdp.load %at : !ktdp.access_tile<16x24xindex> -> tensor<16x24xf32>
      %y = ktdp.load %bt : !ktdp.access_tile<24x16xindex> -> tensor<24x16xf32>
      %p = linalg.matmul ins(%x, %y : tensor<16x24xf32>, tensor<24x16xf32>) outs(%s : tensor<16x16xf32>) -> tensor<16x16xf32>
      scf.yield %p : tensor<16x16xf32>
    }
    %ct = ktdp.construct_access_tile %cv[%r, %c0] {access_tile_set = #cblk, access_tile_order = #id} : memref<32x16xf32> -> !ktdp.access_tile<16x16xindex>
    ktdp.store %acc, %ct : tensor<16x16xf32>, !ktdp.access_tile<16x16xindex>
    return
  }
}
