// An argmax-style all-reduce with two roles (values and indices): the combiner takes
// 2*2 arguments and the op's two results are bound as %best:2 and used as %best#0/#1.
#all = affine_set<(i)[g] : (i >= 0, -i + 15 >= 0)>
#one = affine_set<(g) : (g == 0)>
module {
  func.func @argmax(%v: tensor<64xf32>, %i: tensor<64xi32>) -> (tensor<64xf32>, tensor<64xi32>) attributes {grid = [16]} {
    %vid = arith.constant dense<0xFF800000> : tensor<64xf32>
    %iid = arith.constant dense<-1> : tensor<64xi32>
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #all -> !ktdp.tile_future<(tensor<64xf32>, tensor<64xi32>), groups = #one> {
    ^bb0(%g: index):
      ktdp.yield_partial %v, %i : tensor<64xf32>, tensor<64xi32>
    }
    %best:2 = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #all, identity(%vid, %iid : tensor<64xf32>, tensor<64xi32>) : !ktdp.tile_future<(tensor<64xf32>, tensor<64xi32>), groups = #one> -> tensor<64xf32>, tensor<64xi32> {
    ^bb0(%va: tensor<64xf32>, %ia: tensor<64xi32>, %vb: tensor<64xf32>, %ib: tensor<64xi32>):
      %gt = arith.cmpf ogt, %va, %vb : tensor<64xf32>
      %v2 = arith.select %gt, %va, %vb : tensor<64xi1>, tensor<64xf32>
      %i2 = arith.select %gt, %ia, %ib : tensor<64xi1>, tensor<64xi32>
      ktdp.yield_reduced %v2, %i2 : tensor<64xf32>, tensor<64xi32>
    }
    return %best#0, %best#1 : tensor<64xf32>, tensor<64xi32>
  }
}
