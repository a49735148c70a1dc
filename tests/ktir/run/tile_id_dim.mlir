// RUN-INPUT: x = tile_id_dim.x.npy
// RUN-EXPECT: y = tile_id_dim.y.npy
// Inputs: x is f32 [8, 16], uniform in [-1, 1) from numpy's default_rng (seed in
// make_expected.py). Expected: on a 2x2 grid, the tile at (gx, gy) owns rows 4*gy..4*gy+3
// and columns 8*gx..8*gx+7 and writes y = x + 10 * gx + gy there.
// get_compute_tile_id with a {dim = N} attribute, the reference interpreter's spelling of
// one grid coordinate, and a loop written `scf.for ... : index` that yields nothing.
#all = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 15 >= 0)>
#blk = affine_set<(d0, d1) : (d0 >= 0, -d0 + 3 >= 0, d1 >= 0, -d1 + 7 >= 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @by_coordinate(%x: index, %y: index) attributes {grid = [2, 2]} {
    %gx = ktdp.get_compute_tile_id {dim = 0} : index
    %gy = ktdp.get_compute_tile_id {dim = 1} : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c10 = arith.constant 10 : index
    %r = arith.muli %gy, %c4 : index
    %c = arith.muli %gx, %c8 : index
    %tens = arith.muli %gx, %c10 : index
    %k = arith.addi %tens, %gy : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %xv = ktdp.construct_memory_view %x, sizes: [8, 16], strides: [16, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8x16xf32>
    %yv = ktdp.construct_memory_view %y, sizes: [8, 16], strides: [16, 1] {coordinate_set = #all, memory_space = #ktdp.memory_space<global>} : memref<8x16xf32>
    scf.for %once = %c0 to %c1 step %c1 : index {
      %xt = ktdp.construct_access_tile %xv[%r, %c] {access_tile_set = #blk, access_tile_order = #id} : memref<8x16xf32> -> !ktdp.access_tile<4x8xindex>
      %yt = ktdp.construct_access_tile %yv[%r, %c] {access_tile_set = #blk, access_tile_order = #id} : memref<8x16xf32> -> !ktdp.access_tile<4x8xindex>
      %a = ktdp.load %xt : !ktdp.access_tile<4x8xindex> -> tensor<4x8xf32>
      %s = tensor.splat %kf : tensor<4x8xf32>
      %b = arith.addf %a, %s : tensor<4x8xf32>
      ktdp.store %b, %yt : tensor<4x8xf32>, !ktdp.access_tile<4x8xindex>
      scf.yield
    }
    return
  }
}
