// Load a 4x64 block, take its middle two rows with tensor.extract_slice, scale them and
// write them back with tensor.insert_slice into a zeroed block.
#whole = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#four = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#ord = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @slices(%src: index, %dst: index) attributes {grid = [16]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %row = arith.muli %id, %c4 : index
    %sv = ktdp.construct_memory_view %src, sizes: [64, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %dv = ktdp.construct_memory_view %dst, sizes: [64, 64], strides: [64, 1] {coordinate_set = #whole, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %st = ktdp.construct_access_tile %sv[%row, %c0] {access_tile_set = #four, access_tile_order = #ord} : memref<64x64xf16> -> !ktdp.access_tile<4x64xindex>
    %dt = ktdp.construct_access_tile %dv[%row, %c0] {access_tile_set = #four, access_tile_order = #ord} : memref<64x64xf16> -> !ktdp.access_tile<4x64xindex>
    %x = ktdp.load %st : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>
    %mid = tensor.extract_slice %x[1, 0] [2, 64] [1, 1] : tensor<4x64xf16> to tensor<2x64xf16>
    %half = arith.constant dense<0.5> : tensor<2x64xf16>
    %scaled = arith.mulf %mid, %half : tensor<2x64xf16>
    %zeros = arith.constant dense<0.0> : tensor<4x64xf16>
    %out = tensor.insert_slice %scaled into %zeros[1, 0] [2, 64] [1, 1] : tensor<2x64xf16> into tensor<4x64xf16>
    %one_row = tensor.extract_slice %x[%c0, 0] [1, 64] [1, 1] : tensor<4x64xf16> to tensor<64xf16>
    %e = tensor.extract %one_row[%c4] : tensor<64xf16>
    %marked = tensor.insert %e into %out[%c0, %c0] : tensor<4x64xf16>
    ktdp.store %marked, %dt : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>
    return
  }
}
