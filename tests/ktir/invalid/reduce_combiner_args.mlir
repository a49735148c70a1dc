// The combiner takes lhs and rhs of each partial type and yields the partial types.
#all = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>, %id: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+2 {{region must end with 'ktdp.yield_reduced'}}
    // expected-error@+1 {{reducer region must take 2*1 arguments, got 1}}
    %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      // expected-error@+1 {{'scf.yield' must terminate a region of 'scf.for' or 'scf.if', not of 'ktdp.inter_tile_reduce'}}
      scf.yield %a : tensor<4xf32>
    }
    return
  }
}
