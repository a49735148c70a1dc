// R13: in a reduce, every consumer must also be a producer.
#prod = affine_set<(i)[g] : (i >= 0, -i + 1 >= 0)>
#t3 = affine_set<(i)[g] : (i == 3)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @k(%v: tensor<4xf32>, %id: tensor<4xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #prod -> !ktdp.tile_future<(tensor<4xf32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<4xf32>
    }
    // expected-error@+1 {{is not a subset of producer_tiles_per_group (tile 3 consumes but does not produce)}}
    %r = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #t3, identity(%id : tensor<4xf32>) : !ktdp.tile_future<(tensor<4xf32>), groups = #one> -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = arith.addf %a, %b : tensor<4xf32>
      ktdp.yield_reduced %s : tensor<4xf32>
    }
    return
  }
}
