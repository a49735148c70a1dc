// A tile larger than its view's coordinate_set: what happens outside is a known gap.
#small = affine_set<(d0) : (d0 >= 0, -d0 + 15 >= 0)>
#big = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %v = ktdp.construct_memory_view %a, sizes: [16], strides: [1] {coordinate_set = #small, memory_space = #ktdp.memory_space<global>} : memref<16xf32>
    // expected-warning@+1 {{the spec does not say what happens to points outside a view's coordinate_set}}
    %t = ktdp.construct_access_tile %v[%c0] {access_tile_set = #big, access_tile_order = #o} : memref<16xf32> -> !ktdp.access_tile<32xindex>
    return
  }
}
