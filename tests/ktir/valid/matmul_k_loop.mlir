// A 32x64 by 64x64 f16 matmul on one core, reducing K in two blocks of 32 with an f32
// accumulator carried through scf.for.
module {
  func.func @matmul_k_loop(%a: index, %b: index, %c: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %av = ktdp.construct_memory_view %a, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<32x64xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x64xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [32, 64], strides: [64, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      memory_space = #ktdp.memory_space<global>
    } : memref<32x64xf32>
    %empty = tensor.empty() : tensor<32x64xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<32x64xf32>) -> tensor<32x64xf32>
    %acc = scf.for %k = %c0 to %c64 step %c32 iter_args(%sum = %init) -> (tensor<32x64xf32>) {
      %at = ktdp.construct_access_tile %av[%c0, %k] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<32x64xf16> -> !ktdp.access_tile<32x32xindex>
      %bt = ktdp.construct_access_tile %bv[%k, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
      } : memref<64x64xf16> -> !ktdp.access_tile<32x64xindex>
      %x = ktdp.load %at : !ktdp.access_tile<32x32xindex> -> tensor<32x32xf16>
      %y = ktdp.load %bt : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>
      %p = tensor.empty() : tensor<32x64xf32>
      %pz = linalg.fill ins(%zero : f32) outs(%p : tensor<32x64xf32>) -> tensor<32x64xf32>
      %xf = linalg.matmul ins(%x, %y : tensor<32x32xf16>, tensor<32x64xf16>) outs(%pz : tensor<32x64xf32>) -> tensor<32x64xf32>
      %next = arith.addf %sum, %xf : tensor<32x64xf32>
      scf.yield %next : tensor<32x64xf32>
    }
    %ct = ktdp.construct_access_tile %cv[%c0, %c0] {
      access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,
      access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
    } : memref<32x64xf32> -> !ktdp.access_tile<32x64xindex>
    ktdp.store %acc, %ct : tensor<32x64xf32>, !ktdp.access_tile<32x64xindex>
    return
  }
}
