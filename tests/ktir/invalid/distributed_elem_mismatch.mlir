// Partitions of a distributed view must share the result's element type.
#a = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#b = affine_set<(d0) : (d0 - 32 >= 0, -d0 + 63 >= 0)>
module {
  func.func @k(%p: index) attributes {grid = [2]} {
    %v0 = ktdp.construct_memory_view %p, sizes: [32], strides: [1] {coordinate_set = #a, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<32xf16>
    %v1 = ktdp.construct_memory_view %p, sizes: [32], strides: [1] {coordinate_set = #b, memory_space = #ktdp.memory_space<ct_local, ct_id = 1>} : memref<32xf32>
    // expected-error@+1 {{partition #1 has element type 'f32' but the result has 'f16'}}
    %d = ktdp.construct_distributed_memory_view (%v0, %v1 : memref<32xf16>, memref<32xf32>) : memref<64xf16>
    return
  }
}
