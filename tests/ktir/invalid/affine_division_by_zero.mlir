// Dividing by a literal zero in an affine expression leaves every point undefined; each
// one is reported where the zero is written.
// expected-error@+1 {{'mod' by zero in an affine expression}}
#bad_set = affine_set<(d0) : (d0 mod 0 >= 0, -d0 + 7 >= 0)>
// expected-error@+1 {{'ceildiv' by zero in an affine expression}}
#bad_map = affine_map<(d0, d1) -> (d0, d1 ceildiv (4 - 4))>
module {
  func.func @k(%a: index) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{'floordiv' by zero in an affine expression}}
    %v = ktdp.construct_memory_view %a, sizes: [8], strides: [1] {coordinate_set = affine_set<(d0) : (d0 floordiv 0 >= 0)>, memory_space = #ktdp.memory_space<global>} : memref<8xf32>
    return
  }
}
