// runtime_arg types with and without their optional parameters and an i32 underlying
// type; value extraction yields the underlying type. The operand's type may be written
// without its `!ktdp.runtime_arg` prefix, as the dialect prints it.
module {
  func.func @rt(%a: !ktdp.runtime_arg<index>, %b: !ktdp.runtime_arg<i32, upperbound = 1024>, %c: !ktdp.runtime_arg<index, granularity = 64>) -> index attributes {grid = [1]} {
    %av = ktdp.runtime_arg_extract value from %a : !ktdp.runtime_arg<index> -> index
    %bv = ktdp.runtime_arg_extract value from %b : !ktdp.runtime_arg<i32, upperbound = 1024> -> i32
    %bu = ktdp.runtime_arg_extract upperbound from %b : !ktdp.runtime_arg<i32, upperbound = 1024> -> index
    %cg = ktdp.runtime_arg_extract granularity from %c : <index, granularity=64> -> index
    %bi = arith.index_cast %bv : i32 to index
    %s = arith.addi %av, %bi : index
    %t = arith.addi %s, %bu : index
    %u = arith.ceildivsi %t, %cg : index
    return %u : index
  }
}
