// Plain stores into another core's scratchpad followed by plain loads from one: the spec
// has no ordering rule for them (known gap).
#m = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @k(%lx: index, %x: tensor<64xf16>) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %peer = ktdp.construct_memory_view %lx, sizes: [64], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<64xf16>
    %mine = ktdp.construct_memory_view %lx, sizes: [64], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<64xf16>
    %pt = ktdp.construct_access_tile %peer[%c0] {access_tile_set = #m, access_tile_order = #o} : memref<64xf16> -> !ktdp.access_tile<64xindex>
    %mt = ktdp.construct_access_tile %mine[%c0] {access_tile_set = #m, access_tile_order = #o} : memref<64xf16> -> !ktdp.access_tile<64xindex>
    // expected-warning@+1 {{no memory-ordering rule or barrier for plain cross-core loads and stores}}
    ktdp.store %x, %pt : tensor<64xf16>, !ktdp.access_tile<64xindex>
    %y = ktdp.load %mt : !ktdp.access_tile<64xindex> -> tensor<64xf16>
    return
  }
}
