// Comments, source locations and attributes the playground reads and ignores: module
// attributes, argument attributes, loc(...) after ops and a location alias.
#loc_kernel = loc("kernel.py":12:3)
#m = affine_set<(d0, d1) : (d0 >= 0, -d0 + 31 >= 0, d1 >= 0, -d1 + 31 >= 0)> // the view
#o = affine_map<(d0, d1) -> (d0, d1)>
module attributes {ktdp.target = "spyre"} {
  // A kernel with one argument.
  func.func @located(%a: index {ktdp.buffer = "x"} loc("kernel.py":10:1)) attributes {grid = [1], ktdp.note = "example"} {
    %c0 = arith.constant 0 : index loc(#loc_kernel)
    %v = ktdp.construct_memory_view %a, sizes: [32, 32], strides: [32, 1] {
      // coordinate set and memory space
      coordinate_set = #m,
      memory_space = #ktdp.memory_space<global>
    } : memref<32x32xf16> loc("kernel.py":13:5)
    %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = #m, access_tile_order = #o} : memref<32x32xf16> -> !ktdp.access_tile<32x32xindex> loc(fused["kernel.py":14:5, "k"])
    %x = ktdp.load %t : !ktdp.access_tile<32x32xindex> -> tensor<32x32xf16> // trailing comment
    %y = math.tanh %x : tensor<32x32xf16>
    ktdp.store %y, %t : tensor<32x32xf16>, !ktdp.access_tile<32x32xindex>
    return loc(unknown)
  }
}
