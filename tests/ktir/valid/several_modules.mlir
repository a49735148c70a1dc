// Several top-level modules, a function outside any module and an alias defined after
// the module that uses it: MLIR wraps top-level operations in one implicit module, so all
// three functions and both aliases belong to one program.
#row = affine_set<(d0, d1) : (d0 == 0, d1 >= 0, -d1 + 63 >= 0)>
module {
  func.func @first(%a: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %v = ktdp.construct_memory_view %a, sizes: [1, 64], strides: [64, 1] {coordinate_set = #row, memory_space = #ktdp.memory_space<global>} : memref<1x64xf16>
    %t = ktdp.construct_access_tile %v[%c0, %c0] {access_tile_set = #row, access_tile_order = #id} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>
    %x = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>
    ktdp.store %x, %t : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>
    return
  }
}
#id = affine_map<(d0, d1) -> (d0, d1)>
module @second {
  func.func @second(%a: index) attributes {grid = [1]} {
    return
  }
}
func.func @third() attributes {grid = [1]} {
  return
}
