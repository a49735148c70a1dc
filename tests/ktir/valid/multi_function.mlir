// Two kernels in one module sharing aliases: a scale and a negate.
#m = affine_set<(d0) : (d0 >= 0, -d0 + 1023 >= 0)>
#t = affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @scale(%a: index) attributes {grid = [32]} {
    %c32 = arith.constant 32 : index
    %id = ktdp.get_compute_tile_id : index
    %off = arith.muli %id, %c32 : index
    %v = ktdp.construct_memory_view %a, sizes: [1024], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<1024xf32>
    %t = ktdp.construct_access_tile %v[%off] {access_tile_set = #t, access_tile_order = #o} : memref<1024xf32> -> !ktdp.access_tile<32xindex>
    %x = ktdp.load %t : !ktdp.access_tile<32xindex> -> tensor<32xf32>
    %two = arith.constant dense<2.0> : tensor<32xf32>
    %y = arith.mulf %x, %two : tensor<32xf32>
    ktdp.store %y, %t : tensor<32xf32>, !ktdp.access_tile<32xindex>
    return
  }

  func.func @negate(%a: index) attributes {grid = [32]} {
    %c32 = arith.constant 32 : index
    %id = ktdp.get_compute_tile_id : index
    %off = arith.muli %id, %c32 : index
    %v = ktdp.construct_memory_view %a, sizes: [1024], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<1024xf32>
    %t = ktdp.construct_access_tile %v[%off] {access_tile_set = #t, access_tile_order = #o} : memref<1024xf32> -> !ktdp.access_tile<32xindex>
    %x = ktdp.load %t : !ktdp.access_tile<32xindex> -> tensor<32xf32>
    %y = arith.negf %x : tensor<32xf32>
    ktdp.store %y, %t : tensor<32xf32>, !ktdp.access_tile<32xindex>
    return
  }
}
