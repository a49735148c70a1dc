// Scalar arith: comparisons, select, casts and the integer bit and unsigned ops.
module {
  func.func @arith(%a: i32, %b: i32, %x: f32, %y: f16) -> (i32, f32, index) attributes {grid = [1]} {
    %and = arith.andi %a, %b : i32
    %or = arith.ori %and, %b : i32
    %xor = arith.xori %or, %a : i32
    %sh = arith.shli %xor, %b : i32
    %sr = arith.shrsi %sh, %b : i32
    %ur = arith.shrui %sr, %b : i32
    %q = arith.divui %ur, %b : i32
    %m = arith.remui %q, %b : i32
    %mx = arith.maxui %m, %a : i32
    %lt = arith.cmpi slt, %a, %b : i32
    %sel = arith.select %lt, %mx, %a : i32
    %fa = arith.sitofp %sel : i32 to f32
    %yx = arith.extf %y : f16 to f32
    %sum = arith.addf %fa, %yx : f32
    %rem = arith.remf %sum, %x : f32
    %mn = arith.minnumf %rem, %x : f32
    %olt = arith.cmpf olt, %mn, %x : f32
    %f = arith.select %olt, %mn, %x : f32
    %fi = arith.fptosi %f : f32 to i32
    %wide = arith.extsi %fi : i32 to i64
    %narrow = arith.trunci %wide : i64 to i16
    %back = arith.extsi %narrow : i16 to i32
    %idx = arith.index_cast %back : i32 to index
    %t = arith.truncf %f : f32 to bf16
    %u = arith.extf %t : bf16 to f32
    return %back, %u, %idx : i32, f32, index
  }
}
