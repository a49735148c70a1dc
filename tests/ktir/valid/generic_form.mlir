// MLIR's generic operation form, as MLIR prints with --mlir-print-op-generic: ops with a
// typed form are read into it (and printed back in custom form).
#m = affine_set<(d0) : (d0 >= 0, -d0 + 63 >= 0)>
#o = affine_map<(d0) -> (d0)>
module {
  func.func @generic(%a: index) attributes {grid = [2]} {
    %c0 = "arith.constant"() {value = 0 : index} : () -> index
    %id = "ktdp.get_compute_tile_id"() : () -> index
    %off = "arith.muli"(%id, %c0) : (index, index) -> index
    %v = ktdp.construct_memory_view %a, sizes: [64], strides: [1] {coordinate_set = #m, memory_space = #ktdp.memory_space<global>} : memref<64xf32>
    %t = ktdp.construct_access_tile %v[%off] {access_tile_set = #m, access_tile_order = #o} : memref<64xf32> -> !ktdp.access_tile<64xindex>
    %x = "ktdp.load"(%t) : (!ktdp.access_tile<64xindex>) -> tensor<64xf32>
    %y = "math.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
    %z = "arith.addf"(%x, %y) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "ktdp.store"(%z, %t) : (tensor<64xf32>, !ktdp.access_tile<64xindex>) -> ()
    "func.return"() : () -> ()
  }
}
