// In the old spelling, 'core' is only allowed with LX.
#m = affine_set<(d0) : (d0 >= 0, -d0 + 7 >= 0)>
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    // expected-error@+1 {{'core' is only allowed with 'LX'}}
    %v = ktdp.construct_memory_view %a, sizes: [8], strides: [1] {coordinate_set = #m, memory_space = #ktdp.spyre_memory_space<HBM, core = 2>} : memref<8xf16>
    return
  }
}
