// All-reduce whose result drops the partial's within-group tile axis, as the earlier
// inter-tile reduction design writes it: each of four tiles contributes a 1x32 row of
// column maxima, and every tile receives the 32 maxima as a rank-1 tensor. The production
// uses the document's keyword spelling with the partial types before '->'.
#cols = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#part = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#vec = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#o2 = affine_map<(d0, d1) -> (d0, d1)>
#o1 = affine_map<(d0) -> (d0)>
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#only = affine_set<(g) : (g == 0)>
module {
  func.func @column_max(%a: index, %m: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %t = ktdp.get_compute_tile_id : index
    %r0 = arith.muli %t, %c8 : index
    %av = ktdp.construct_memory_view %a, sizes: [32, 32], strides: [32, 1] {coordinate_set = #cols, memory_space = #ktdp.memory_space<global>} : memref<32x32xf16>
    %mv = ktdp.construct_memory_view %m, sizes: [32], strides: [1] {coordinate_set = #vec, memory_space = #ktdp.memory_space<global>} : memref<32xf16>
    %at = ktdp.construct_access_tile %av[%r0, %c0] {access_tile_set = #part, access_tile_order = #o2} : memref<32x32xf16> -> !ktdp.access_tile<8x32xindex>
    %block = ktdp.load %at : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf16>
    %ninf = arith.constant 0xFC00 : f16
    %e = tensor.empty() : tensor<32xf16>
    %init = linalg.fill ins(%ninf : f16) outs(%e : tensor<32xf16>) -> tensor<32xf16>
    %colmax = linalg.reduce { arith.maximumf } ins(%block : tensor<8x32xf16>) outs(%init : tensor<32xf16>) dimensions = [0]
    %row = tensor.expand_shape %colmax [[0, 1]] output_shape [1, 32] : tensor<32xf16> into tensor<1x32xf16>
    %lowest = arith.constant dense<0xFC00> : tensor<1x32xf16>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #four : tensor<1x32xf16> -> !ktdp.tile_future<tensor<1x32xf16>, groups = #only> {
    ^bb0(%g: index):
      ktdp.yield_partial %row : tensor<1x32xf16>
    }
    %max = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #four, identity(%lowest : tensor<1x32xf16>) : !ktdp.tile_future<tensor<1x32xf16>, groups = #only> -> tensor<32xf16> {
    ^bb0(%l: tensor<1x32xf16>, %r: tensor<1x32xf16>):
      %x = arith.maximumf %l, %r : tensor<1x32xf16>
      ktdp.yield_reduced %x : tensor<1x32xf16>
    }
    %is0 = arith.cmpi eq, %t, %c0 : index
    scf.if %is0 {
      %mt = ktdp.construct_access_tile %mv[%c0] {access_tile_set = #vec, access_tile_order = #o1} : memref<32xf16> -> !ktdp.access_tile<32xindex>
      ktdp.store %max, %mt : tensor<32xf16>, !ktdp.access_tile<32xindex>
    }
    return
  }
}
