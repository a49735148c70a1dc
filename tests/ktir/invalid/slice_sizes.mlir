// extract_slice sizes must give the result type and stay inside the source.
module {
  func.func @k(%t: tensor<4x64xf16>) attributes {grid = [1]} {
    // expected-error@+1 {{sizes [2, 64] do not give 'tensor<3x64xf16>'}}
    %a = tensor.extract_slice %t[0, 0] [2, 64] [1, 1] : tensor<4x64xf16> to tensor<3x64xf16>
    // expected-error@+1 {{slice [3, 5) leaves dimension 0 of size 4}}
    %b = tensor.extract_slice %t[3, 0] [2, 64] [1, 1] : tensor<4x64xf16> to tensor<2x64xf16>
    return
  }
}
