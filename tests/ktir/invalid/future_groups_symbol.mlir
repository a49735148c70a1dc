// The groups set of a tile_future ranges over one dimension g with no symbols.
#t0 = affine_set<(i)[g] : (i == 0)>
module {
  // expected-error@+1 {{'groups' of a tile_future must be a set over one dimension (g) without symbols}}
  func.func @k(%f: !ktdp.tile_future<(tensor<4xf32>), groups = affine_set<(g)[s] : (g == 0)>>) attributes {grid = [1]} {
    return
  }
}
