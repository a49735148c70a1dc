// A 64x2048 by 2048x8192 f16 matmul on 32 cores: each core owns 256 output columns and
// reduces K in blocks of 256 with an f32 accumulator carried through scf.for, then stores
// f16. (Benchmark kernel at the scale of the public KTIR examples.)
#a = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 2047 >= 0)>
#b = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2047 >= 0, d1 >= 0, -d1 + 8191 >= 0)>
#c = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 8191 >= 0)>
#at = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#bt = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 255 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @matmul(%a: index, %b: index, %c: index) attributes {grid = [32]} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %c2048 = arith.constant 2048 : index
    %zero = arith.constant 0.0 : f32
    %id = ktdp.get_compute_tile_id : index
    %n0 = arith.muli %id, %c256 : index
    %av = ktdp.construct_memory_view %a, sizes: [64, 2048], strides: [2048, 1] {coordinate_set = #a, memory_space = #ktdp.memory_space<global>} : memref<64x2048xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [2048, 8192], strides: [8192, 1] {coordinate_set = #b, memory_space = #ktdp.memory_space<global>} : memref<2048x8192xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [64, 8192], strides: [8192, 1] {coordinate_set = #c, memory_space = #ktdp.memory_space<global>} : memref<64x8192xf16>
    %empty = tensor.empty() : tensor<64x256xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<64x256xf32>) -> tensor<64x256xf32>
    %acc = scf.for %k = %c0 to %c2048 step %c256 iter_args(%sum = %init) -> (tensor<64x256xf32>) {
      %ta = ktdp.construct_access_tile %av[%c0, %k] {access_tile_set = #at, access_tile_order = #ord} : memref<64x2048xf16> -> !ktdp.access_tile<64x256xindex>
      %tb = ktdp.construct_access_tile %bv[%k, %n0] {access_tile_set = #bt, access_tile_order = #ord} : memref<2048x8192xf16> -> !ktdp.access_tile<256x256xindex>
      %x = ktdp.load %ta : !ktdp.access_tile<64x256xindex> -> tensor<64x256xf16>
      %y = ktdp.load %tb : !ktdp.access_tile<256x256xindex> -> tensor<256x256xf16>
      %next = linalg.matmul ins(%x, %y : tensor<64x256xf16>, tensor<256x256xf16>) outs(%sum : tensor<64x256xf32>) -> tensor<64x256xf32>
      scf.yield %next : tensor<64x256xf32>
    }
    %ct = ktdp.construct_access_tile %cv[%c0, %n0] {access_tile_set = #at, access_tile_order = #ord} : memref<64x8192xf16> -> !ktdp.access_tile<64x256xindex>
    %out = arith.truncf %acc : tensor<64x256xf32> to tensor<64x256xf16>
    ktdp.store %out, %ct : tensor<64x256xf16>, !ktdp.access_tile<64x256xindex>
    return
  }
}
