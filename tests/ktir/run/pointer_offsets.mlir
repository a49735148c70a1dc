// RUN-INPUT: src = pointer_offsets.src.npy
// RUN-EXPECT: dst = pointer_offsets.dst.npy
// Inputs: src is f32 [256] (flat), uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: dst = 3 * src.
// Views whose base address is an argument plus an offset computed from the tile id and a
// loop variable, as Triton-lowered kernels write pointers: each of 4 tiles reads its 64
// elements as one row and writes them back as two 32-element halves in a loop. The
// runner sizes src and dst from the largest offset each view can take (tile ids 0 to 3,
// loop variable 0 to 1), with no --place and no sizes given.
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
#half = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 31 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @triple(%src: index, %dst: index) attributes {grid = [4]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %pid = ktdp.get_compute_tile_id : index
    %offs = arith.muli %pid, %c64 : index
    %row_ptr = arith.addi %src, %offs : index
    %sv = ktdp.construct_memory_view %row_ptr, sizes: [1, 64], strides: [64, 1] {coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf32>
    %st = ktdp.construct_access_tile %sv[%c0, %c0] {access_tile_set = #row, access_tile_order = #id} : memref<1x64xf32> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %st : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf32>
    %three = arith.constant dense<3.0> : tensor<1x64xf32>
    %y = arith.mulf %x, %three : tensor<1x64xf32>
    %first = arith.muli %pid, %c2 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %blk = arith.addi %first, %i : index
      %boffs = arith.muli %blk, %c32 : index
      %out_ptr = arith.addi %dst, %boffs : index
      %dv = ktdp.construct_memory_view %out_ptr, sizes: [1, 32], strides: [32, 1] {coordinate_set = #half, memory_space = #ktdp.memory_space<global>} : memref<1x32xf32>
      %dt = ktdp.construct_access_tile %dv[%c0, %c0] {access_tile_set = #half, access_tile_order = #id} : memref<1x32xf32> -> !ktdp.access_tile<1x32xindex>
      %col = arith.muli %i, %c32 : index
      %part = tensor.extract_slice %y[0, %col] [1, 32] [1, 1] : tensor<1x64xf32> to tensor<1x32xf32>
      ktdp.store %part, %dt : tensor<1x32xf32>, !ktdp.access_tile<1x32xindex>
    }
    return
  }
}
