// func.return must return the declared types.
module {
  func.func @k(%a: index) -> f32 attributes {grid = [1]} {
    // expected-error@+1 {{'func.return' returns (index) but '@k' is declared to return (f32)}}
    return %a : index
  }
}
