// Y[m, k] = X[I1[m, k], I2[m + 1, k]]: both coordinates come from index views, the
// variable space has a symbolic extent bound with symbols(...), and the enumeration
// order is transposed.
#x = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#idx = affine_set<(d0, d1) : (d0 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#vars = affine_set<(m, k)[s0] : (m >= 0, -m + 1 >= 0, k >= 0, -k + s0 - 1 >= 0)>
#swap = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @double_gather(%xa: index, %i1a: index, %i2a: index, %len: index) attributes {grid = [1]} {
    %xv = ktdp.construct_memory_view %xa, sizes: [64, 64], strides: [64, 1] {coordinate_set = #x, memory_space = #ktdp.memory_space<global>} : memref<64x64xf16>
    %i1 = ktdp.construct_memory_view %i1a, sizes: [3, 64], strides: [64, 1] {coordinate_set = #idx, memory_space = #ktdp.memory_space<global>} : memref<3x64xi32>
    %i2 = ktdp.construct_memory_view %i2a, sizes: [3, 64], strides: [64, 1] {coordinate_set = #idx, memory_space = #ktdp.memory_space<global>} : memref<3x64xi32>
    %t = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k) %xv[ind(%i1[%m, %k]), ind(%i2[%m + 1, %k])] symbols(%len) {variables_space_set = #vars, variables_space_order = #swap} : memref<64x64xf16>, memref<3x64xi32>, memref<3x64xi32> -> !ktdp.access_tile<?x2xindex>
    %y = ktdp.load %t : !ktdp.access_tile<?x2xindex> -> tensor<?x2xf16>
    return
  }
}
