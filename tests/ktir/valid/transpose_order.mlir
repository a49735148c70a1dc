// A tile enumerated column-major through its access_tile_order, and a linalg.transpose
// of the loaded data back to row-major.
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 31 >= 0)>
#cm = affine_map<(d0, d1) -> (d1, d0)>
#rm = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>
module {
  func.func @transpose(%a: index, %b: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 32], strides: [32, 1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64x32xf32>
    %bv = ktdp.construct_memory_view %b, sizes: [32, 64], strides: [64, 1] {coordinate_set = #out, memory_space = #ktdp.memory_space<global>} : memref<32x64xf32>
    %at = ktdp.construct_access_tile %av[%c0, %c0] {access_tile_set = #m, access_tile_order = #rm} : memref<64x32xf32> -> !ktdp.access_tile<64x32xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {access_tile_set = #out, access_tile_order = #cm} : memref<32x64xf32> -> !ktdp.access_tile<32x64xindex>
    %x = ktdp.load %at : !ktdp.access_tile<64x32xindex> -> tensor<64x32xf32>
    %e = tensor.empty() : tensor<32x64xf32>
    %y = linalg.transpose ins(%x : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
    ktdp.store %y, %bt : tensor<32x64xf32>, !ktdp.access_tile<32x64xindex>
    return
  }
}
