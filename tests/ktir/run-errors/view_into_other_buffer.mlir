// A view whose offset the runner cannot bound before the run (a loop variable through
// arith.maxsi, which the analysis does not follow) does not size %x, which its plain view
// does; its second row (stride 64) reaches past %x into buffer %y: an error naming both.
// ARGS: n=2
// EXPECT-ERROR: over buffer 'x'
// EXPECT-ERROR: of buffer 'y'
#s = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#r = affine_set<(d0, d1) : (d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#o = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: index, %y: index, %n: index) attributes {grid = [1]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %xw = ktdp.construct_memory_view %x, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [4, 8], strides: [8, 1] {coordinate_set = #s, memory_space = #ktdp.memory_space<global>} : memref<4x8xf32>
  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #s, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<4x8xindex>
  scf.for %i = %c0 to %n step %c1 {
    %twice = arith.muli %i, %c2 : index
    %off = arith.maxsi %twice, %c0 : index
    %xa = arith.addi %x, %off : index
    %xv = ktdp.construct_memory_view %xa, sizes: [2, 8], strides: [64, 1] {coordinate_set = #r, memory_space = #ktdp.memory_space<global>} : memref<2x8xf32>
    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {access_tile_set = #r, access_tile_order = #o} : memref<2x8xf32> -> !ktdp.access_tile<2x8xindex>
    %a = ktdp.load %xt : !ktdp.access_tile<2x8xindex> -> tensor<2x8xf32>
    %yr = ktdp.construct_access_tile %yv[%c0, %c0] {access_tile_set = #r, access_tile_order = #o} : memref<4x8xf32> -> !ktdp.access_tile<2x8xindex>
    ktdp.store %a, %yr : tensor<2x8xf32>, !ktdp.access_tile<2x8xindex>
  }
  return
}
