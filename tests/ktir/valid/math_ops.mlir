// Elementwise math on tensors.
module {
  func.func @math(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> attributes {grid = [1]} {
    %a = math.exp %x : tensor<8x16xf32>
    %b = math.exp2 %a : tensor<8x16xf32>
    %c = math.log %b : tensor<8x16xf32>
    %d = math.log2 %c : tensor<8x16xf32>
    %e = math.sqrt %d : tensor<8x16xf32>
    %f = math.rsqrt %e : tensor<8x16xf32>
    %g = math.tanh %f : tensor<8x16xf32>
    %h = math.erf %g : tensor<8x16xf32>
    %i = math.absf %h : tensor<8x16xf32>
    %j = math.sin %i : tensor<8x16xf32>
    %k = math.cos %j : tensor<8x16xf32>
    %l = math.floor %k : tensor<8x16xf32>
    %m = math.ceil %l : tensor<8x16xf32>
    %n = math.powf %m, %y : tensor<8x16xf32>
    %o = math.fma %n, %y, %x : tensor<8x16xf32>
    %p = arith.maximumf %o, %x : tensor<8x16xf32>
    %q = arith.minimumf %p, %y : tensor<8x16xf32>
    %r = arith.subf %q, %x fastmath<fast> : tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
}
