// RUN-INPUT: x = reductions.x.npy
// RUN-EXPECT: s = reductions.s.npy
// RUN-EXPECT: m = reductions.m.npy
// Inputs: x is f32 [32, 64], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: s = row sums (the shorthand reduce), m = row maxima (the
// region form). Two tiles each take sixteen rows.
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#vec = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#part = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
module {
  func.func @row_stats(%x: index, %s: index, %m: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %t = ktdp.get_compute_tile_id : index
    %r = arith.muli %t, %c16 : index
    %xv = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<32x64xf32>
    %sv = ktdp.construct_memory_view %s, sizes: [32], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
    %mv = ktdp.construct_memory_view %m, sizes: [32], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<32xf32>
    %xt = ktdp.construct_access_tile %xv[%r, %c0] {access_tile_set = #rows, access_tile_order = #id2} : memref<32x64xf32> -> !ktdp.access_tile<16x64xindex>
    %st = ktdp.construct_access_tile %sv[%r] {access_tile_set = #part, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<16xindex>
    %mt = ktdp.construct_access_tile %mv[%r] {access_tile_set = #part, access_tile_order = #id1} : memref<32xf32> -> !ktdp.access_tile<16xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf32>
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %e = tensor.empty() : tensor<16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %lo = linalg.fill ins(%ninf : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %sum = linalg.reduce { arith.addf } ins(%a : tensor<16x64xf32>) outs(%z : tensor<16xf32>) dimensions = [1]
    %max = linalg.reduce ins(%a : tensor<16x64xf32>) outs(%lo : tensor<16xf32>) dimensions = [1]
      (%in: f32, %acc: f32) {
        %b = arith.maximumf %in, %acc : f32
        linalg.yield %b : f32
      }
    ktdp.store %sum, %st : tensor<16xf32>, !ktdp.access_tile<16xindex>
    ktdp.store %max, %mt : tensor<16xf32>, !ktdp.access_tile<16xindex>
    return
  }
}
