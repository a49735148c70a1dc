// A missing grid is a gap of the spec: a warning, not an error.
module {
  // expected-warning@+1 {{has no 'grid' attribute}}
  func.func @k(%a: index) {
    return
  }
}
