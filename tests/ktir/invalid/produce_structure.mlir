// The producer region takes one index group id and yields the future's partial types.
#t0 = affine_set<(i)[g] : (i == 0)>
#all = affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>, %w: tensor<8xf32>) attributes {grid = [4]} {
    // expected-error@+1 {{producer region must take a single 'index' group-id argument}}
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #t0 -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
      ktdp.yield_partial %v : tensor<4xf32>
    }
    %r = ktdp.inter_tile_consume(%f) consumer_tiles_per_group = #all : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32>
    %f2 = ktdp.inter_tile_produce producer_tiles_per_group = #t0 -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      // expected-error@+1 {{'ktdp.yield_partial' yields (tensor<8xf32>) but the future carries (tensor<4xf32>)}}
      ktdp.yield_partial %w : tensor<8xf32>
    }
    // expected-error@+1 {{result types must match the future's partial types}}
    %r2 = ktdp.inter_tile_consume(%f2) consumer_tiles_per_group = #all : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<8xf32>
    return
  }
}
