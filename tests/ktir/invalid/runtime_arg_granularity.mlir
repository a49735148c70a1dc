// runtime_arg granularity and upperbound must be positive; extraction needs the field.
module {
  // expected-error@+1 {{granularity must be positive, found 0}}
  func.func @k(%a: !ktdp.runtime_arg<index, granularity = 0>, %b: !ktdp.runtime_arg<index, upperbound = 64>) attributes {grid = [1]} {
    // expected-error@+1 {{cannot extract granularity from a runtime_arg that does not have one}}
    %g = ktdp.runtime_arg_extract granularity from %b : !ktdp.runtime_arg<index, upperbound = 64> -> index
    // expected-error@+1 {{must match the runtime_arg's underlying type 'index'}}
    %v = ktdp.runtime_arg_extract value from %b : !ktdp.runtime_arg<index, upperbound = 64> -> i32
    return
  }
}
