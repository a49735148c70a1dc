// ct_id is only meaningful for ct_local.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{'ct_id' is only allowed with 'ct_local'}}
    %v = ktdp.construct_memory_view %a, sizes: [8, 64], strides: [64, 1] {coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>, memory_space = #ktdp.memory_space<global, ct_id = 1>} : memref<8x64xf16>
    return
  }
}
