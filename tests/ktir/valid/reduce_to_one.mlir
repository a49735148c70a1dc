// Reduce-to-one: four producers per group, only the group's first tile receives the
// maximum; eight groups over a grid of 32.
#quads = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#leader = affine_set<(i)[g] : (i - 4 * g == 0)>
#eight = affine_set<(g) : (g >= 0, -g + 7 >= 0)>
module {
  func.func @max_to_leader(%v: tensor<8x8xf32>) attributes {grid = [32]} {
    %ninf = arith.constant dense<0xFF800000> : tensor<8x8xf32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #quads -> !ktdp.tile_future<(tensor<8x8xf32>), groups = #eight> {
    ^bb0(%g: index):
      ktdp.yield_partial %v : tensor<8x8xf32>
    }
    %m = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #leader, identity(%ninf : tensor<8x8xf32>) : !ktdp.tile_future<(tensor<8x8xf32>), groups = #eight> -> tensor<8x8xf32> {
    ^bb0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>):
      %c = arith.maximumf %a, %b : tensor<8x8xf32>
      ktdp.yield_reduced %c : tensor<8x8xf32>
    }
    return
  }
}
