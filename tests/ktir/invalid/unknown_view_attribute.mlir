// A misspelled attribute on a memory view names the attributes the op takes.
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    // expected-error@+1 {{unknown attribute 'cordinate_set' on 'ktdp.construct_memory_view' (expected coordinate_set, memory_space)}}
    %v = ktdp.construct_memory_view %a, sizes: [8], strides: [1] {cordinate_set = affine_set<(d0) : (d0 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8xf16>
    return
  }
}
