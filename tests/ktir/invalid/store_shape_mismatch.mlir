// A store of a 4x64 tensor through an 8x64 tile.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<8x64xf16>
    %t = ktdp.construct_access_tile %v[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 63 - d1 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<8x64xf16> -> !ktdp.access_tile<8x64xindex>
    %e = tensor.empty() : tensor<4x64xf16>
    // expected-error@+1 {{stores 'tensor<4x64xf16>' through an access tile}}
    ktdp.store %e, %t : tensor<4x64xf16>, !ktdp.access_tile<8x64xindex>
    return
  }
}
