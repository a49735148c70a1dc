// Affine sets and maps with symbols, floordiv, ceildiv and mod: a strided tile (every
// other column) and a view over a symbolic number of sticks.
#sticks = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 63 >= 0)>
#even = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 63 >= 0, d1 mod 2 == 0)>
#half = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 31 >= 0, (d1 * 2) floordiv 64 == 0, d1 ceildiv 32 <= 1)>
#o = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @strided(%a: index, %n: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %id = ktdp.get_compute_tile_id : index
    %r = arith.muli %id, %c4 : index
    %v = ktdp.construct_memory_view %a, sizes: [%n, 64], strides: [64, 1] {coordinate_set = #sticks, memory_space = #ktdp.memory_space<global>} : memref<?x64xf32>
    %t = ktdp.construct_access_tile %v[%r, %c0] {access_tile_set = #half, access_tile_order = #o} : memref<?x64xf32> -> !ktdp.access_tile<4x32xindex>
    %x = ktdp.load %t : !ktdp.access_tile<4x32xindex> -> tensor<4x32xf32>
    %y = math.exp %x : tensor<4x32xf32>
    ktdp.store %y, %t : tensor<4x32xf32>, !ktdp.access_tile<4x32xindex>
    return
  }
}
