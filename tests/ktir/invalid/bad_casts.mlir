// Casts and comparisons check their element kinds.
module {
  func.func @k(%h: f32, %i: i32) attributes {grid = [1]} {
    // expected-error@+1 {{cannot cast 'f32' to 'f16'}}
    %a = arith.extf %h : f32 to f16
    // expected-error@+1 {{compares floating-point values, not 'i32'}}
    %b = arith.cmpf olt, %i, %i : i32
    return
  }
}
