// An inter_tile_reduce result may drop the partial's size-1 tile axes and nothing else: the
// element type and every other axis stay, and all roles drop the same axes.
#four = affine_set<(i)[g] : (i - 4 * g >= 0, -i + 4 * g + 3 >= 0)>
#only = affine_set<(g) : (g == 0)>
module {
  func.func @k(%p: tensor<2x64xf16>, %q: tensor<1x64xf16>, %s: tensor<1x1x8xf32>) attributes {grid = [4]} {
    %f = ktdp.inter_tile_produce producer_tiles_per_group = #four : tensor<2x64xf16> -> !ktdp.tile_future<tensor<2x64xf16>, groups = #only> {
    ^bb0(%g: index):
      ktdp.yield_partial %p : tensor<2x64xf16>
    }
    // expected-error@+1 {{result #0 'tensor<64xf16>' is neither partial #0 'tensor<2x64xf16>' nor that partial with size-1 within-group tile axes collapsed}}
    %a = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #four, identity(%p : tensor<2x64xf16>) : !ktdp.tile_future<tensor<2x64xf16>, groups = #only> -> tensor<64xf16> {
    ^bb0(%l: tensor<2x64xf16>, %r: tensor<2x64xf16>):
      ktdp.yield_reduced %l : tensor<2x64xf16>
    }
    %f2 = ktdp.inter_tile_produce producer_tiles_per_group = #four : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>, groups = #only> {
    ^bb0(%g: index):
      ktdp.yield_partial %q : tensor<1x64xf16>
    }
    // expected-error@+1 {{result #0 'tensor<64xf32>' is neither partial #0 'tensor<1x64xf16>'}}
    %b = ktdp.inter_tile_reduce(%f2) consumer_tiles_per_group = #four, identity(%q : tensor<1x64xf16>) : !ktdp.tile_future<tensor<1x64xf16>, groups = #only> -> tensor<64xf32> {
    ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):
      ktdp.yield_reduced %l : tensor<1x64xf16>
    }
    %f3 = ktdp.inter_tile_produce producer_tiles_per_group = #four : tensor<1x64xf16>, tensor<1x1x8xf32> -> !ktdp.tile_future<tensor<1x64xf16>, tensor<1x1x8xf32>, groups = #only> {
    ^bb0(%g: index):
      ktdp.yield_partial %q, %s : tensor<1x64xf16>, tensor<1x1x8xf32>
    }
    // expected-error@+1 {{every result must collapse the same tile axes: result #0 drops [0], result #1 drops [0, 1]}}
    %c:2 = ktdp.inter_tile_reduce(%f3) consumer_tiles_per_group = #four, identity(%q, %s : tensor<1x64xf16>, tensor<1x1x8xf32>) : !ktdp.tile_future<tensor<1x64xf16>, tensor<1x1x8xf32>, groups = #only> -> tensor<64xf16>, tensor<8xf32> {
    ^bb0(%l: tensor<1x64xf16>, %l2: tensor<1x1x8xf32>, %r: tensor<1x64xf16>, %r2: tensor<1x1x8xf32>):
      ktdp.yield_reduced %l, %l2 : tensor<1x64xf16>, tensor<1x1x8xf32>
    }
    return
  }
}
