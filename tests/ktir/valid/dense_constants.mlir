// Constants: scalars of every kind, splats, nested dense arrays, booleans and the
// hexadecimal bit patterns MLIR uses for infinities.
module {
  func.func @constants() attributes {grid = [1]} {
    %i = arith.constant 42 : index
    %n = arith.constant -7 : i32
    %t = arith.constant true : i1
    %h = arith.constant 1.5 : f16
    %e = arith.constant 2.5e-03 : f32
    %inf = arith.constant 0x7C00 : f16
    %splat = arith.constant dense<3.0> : tensor<4x4xf32>
    %ints = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %mat = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
    %mask = arith.constant dense<[true, false, true]> : tensor<3xi1>
    %ninf = arith.constant dense<0xFF800000> : tensor<2xf32>
    return
  }
}
