// get_compute_tile_id must produce index values.
module {
  func.func @k(%a: index) attributes {grid = [2]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{results must all be of type 'index'}}
    %id = ktdp.get_compute_tile_id : i32
    return
  }
}
