// SSA sizes are accepted over static memref dimensions, but they must be 'index' values and
// there must be one size and one stride per dimension.
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 63 >= 0)>
module {
  func.func @k(%in: index, %x: f32, %n: index) attributes {grid = [1]} {
    // expected-error@+1 {{size or stride '%x' has type 'f32' but 'index' is expected}}
    %v = ktdp.construct_memory_view %in, sizes: [%x, 64], strides: [64, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
    // expected-error@+1 {{has 3 sizes and 3 strides but the memref has rank 2}}
    %w = ktdp.construct_memory_view %in, sizes: [%n, 64, 1], strides: [64, 1, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<16x64xf16>
    return
  }
}
