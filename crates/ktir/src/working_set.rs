//! The working set of a kernel: the peak bytes of tensor values live at once on the core
//! that runs it, counted the way the simulator charges its scratchpad.
//!
//! Every op that yields a tensor (loads, fills, transposed and padded copies, reshapes,
//! constants of tensor type, accumulators) adds its bytes when it runs; a `tensor.empty`
//! adds none (it is the destination its user's result is written into); a
//! value defined in a block is freed after its last use in that block, where a use inside a
//! nested region counts as a use by the op that holds the region (a loop body runs again,
//! so values from outside stay alive until the loop ends). A loop's iteration arguments
//! count once more inside the body: from the second step on, the carried value and the
//! initial one are both held. A value handed to `ktdp.yield_partial` is held by the future
//! that carries it, and freed with that future. A combiner region runs in the collective,
//! not on the core, and is not counted; nor are the scalar bodies of `linalg.generic` and
//! `linalg.reduce`.
//!
//! The simulator frees values by the same rule, [`frees_after_last_use`], and charges the
//! same [`bytes`] per tensor, so the two cannot drift apart. Tensors of a dynamic shape are
//! the one thing the analysis cannot size: it counts them as 0 bytes.
//!
//! The analysis is hardware-agnostic: it counts bytes and liveness; a compiler compares
//! the peak with a machine's capacity.

use crate::ast::{Block, Func, Module, OpKind, ScalarType, Type};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::hash::Hash;

/// Bytes a tensor of `numel` elements of type `elem` takes in scratchpad.
pub fn bytes(numel: usize, elem: ScalarType) -> u64 {
    (numel as u64).saturating_mul(elem.size_bytes() as u64)
}

/// Bytes of a tensor type (0 for anything else, and for tensors of unknown shape).
pub fn tensor_bytes(t: &Type) -> u64 {
    match t {
        Type::Tensor { elem, .. } => t
            .static_shape()
            .map(|s| bytes(s.iter().product(), *elem))
            .unwrap_or(0),
        _ => 0,
    }
}

/// When values are freed: a value defined in a block (a block argument or an op's result,
/// as `defined` says) is freed after the op of that block that uses it last, a use inside
/// an op's regions counting as a use by the op (a loop body runs again, so values from
/// outside stay alive until the loop ends). A result nothing uses is freed by the op that
/// made it: otherwise a loop body would charge a new one every iteration. `uses[i]` is what
/// op `i` of the block uses, its regions included, and `results[i]` what it defines; the
/// result is, per op, the values it frees, sorted. Values are whatever identifies them to
/// the caller: names here, slots in the simulator.
pub fn frees_after_last_use<K: Copy + Ord + Hash>(
    uses: &[Vec<K>],
    results: &[Vec<K>],
    defined: impl Fn(&K) -> bool,
) -> Vec<Vec<K>> {
    let mut last: HashMap<K, usize> = HashMap::new();
    for (i, u) in uses.iter().enumerate() {
        for &k in u {
            last.insert(k, i);
        }
        for &r in results.get(i).into_iter().flatten() {
            last.entry(r).or_insert(i);
        }
    }
    let mut by_op: Vec<Vec<K>> = vec![Vec::new(); uses.len()];
    for (k, i) in last {
        if defined(&k) {
            if let Some(f) = by_op.get_mut(i) {
                f.push(k);
            }
        }
    }
    for f in &mut by_op {
        f.sort_unstable();
    }
    by_op
}

/// Peak bytes of tensor values live at once while one core runs `func`.
pub fn peak_live_bytes(func: &Func) -> u64 {
    Walker.block(&func.body, 0, &[]).0
}

/// [`peak_live_bytes`] of every function of `module`, by name, in order.
pub fn per_func(module: &Module) -> Vec<(String, u64)> {
    module
        .funcs
        .iter()
        .map(|f| (f.name.clone(), peak_live_bytes(f)))
        .collect()
}

/// Walks a kernel's blocks, counting live tensor bytes.
struct Walker;

impl Walker {
    /// The peak of `block` run with `base` bytes already live and `args` (block argument
    /// bytes, by name) charged on entry, and the bytes it leaves charged when it ends.
    ///
    /// A value handed to `ktdp.yield_partial` stays charged after its last use: the
    /// future that carries it holds it until the future itself is freed.
    fn block(&mut self, block: &Block, base: u64, args: &[(String, u64)]) -> (u64, u64) {
        fn uses<'a>(kind: &'a OpKind, out: &mut Vec<&'a str>) {
            out.extend(kind.operands().into_iter().map(|v| v.name.as_str()));
            for r in kind.regions() {
                for op in &r.ops {
                    uses(&op.kind, out);
                }
            }
        }
        fn partials<'a>(kind: &'a OpKind, out: &mut HashSet<&'a str>) {
            if let OpKind::YieldPartial { values, .. } = kind {
                out.extend(values.iter().map(|v| v.name.as_str()));
            }
            for r in kind.regions() {
                for op in &r.ops {
                    partials(&op.kind, out);
                }
            }
        }
        let mut kept: HashSet<&str> = HashSet::new();
        let mut op_uses = Vec::with_capacity(block.ops.len());
        for op in &block.ops {
            let mut u = Vec::new();
            uses(&op.kind, &mut u);
            op_uses.push(u);
            partials(&op.kind, &mut kept);
        }
        let defined: HashSet<&str> = args
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(
                block
                    .ops
                    .iter()
                    .flat_map(|o| o.results.iter().map(String::as_str)),
            )
            .collect();
        let op_results: Vec<Vec<&str>> = block
            .ops
            .iter()
            .map(|o| o.results.iter().map(String::as_str).collect())
            .collect();
        let frees = frees_after_last_use(&op_uses, &op_results, |n| defined.contains(n));
        let mut sizes: HashMap<&str, u64> = HashMap::new();
        // Bytes of partial results each future of this block holds.
        let mut held: HashMap<&str, u64> = HashMap::new();
        let mut live = base;
        let mut leaked = 0;
        for (name, bytes) in args {
            live += bytes;
            sizes.insert(name, *bytes);
        }
        let mut peak = live;
        for (op, frees) in block.ops.iter().zip(frees) {
            match &op.kind {
                OpKind::For {
                    iter_args, body, ..
                } => {
                    let carried: Vec<(String, u64)> = iter_args
                        .iter()
                        .zip(&op.result_types)
                        .map(|((name, _), t)| (name.clone(), tensor_bytes(t)))
                        .collect();
                    // Each step's partials are gone by the end of the step.
                    let (p, _) = self.block(body, live, &carried);
                    peak = peak.max(p);
                }
                OpKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    let mut most = 0;
                    for b in std::iter::once(then_block).chain(else_block) {
                        let (p, leak) = self.block(b, live, &[]);
                        peak = peak.max(p);
                        most = most.max(leak);
                    }
                    live += most;
                    leaked += most;
                }
                OpKind::InterTileProduce { body, .. } => {
                    let (p, leak) = self.block(body, live, &[]);
                    peak = peak.max(p);
                    live += leak;
                    if let Some(future) = op.results.first() {
                        held.insert(future, leak);
                    } else {
                        leaked += leak;
                    }
                }
                _ => {}
            }
            // A `tensor.empty` is only the destination its user writes the result into; the
            // result is charged, the empty is not (the simulator counts it the same way).
            let is_empty = matches!(op.kind, OpKind::TensorEmpty { .. });
            for (name, t) in op.results.iter().zip(&op.result_types) {
                let b = if is_empty { 0 } else { tensor_bytes(t) };
                live += b;
                sizes.insert(name, b);
            }
            peak = peak.max(live);
            for name in frees {
                if let Some(b) = sizes.remove(name) {
                    if kept.contains(name) {
                        leaked += b;
                    } else {
                        live = live.saturating_sub(b);
                    }
                }
                if let Some(b) = held.remove(name) {
                    live = live.saturating_sub(b);
                }
            }
        }
        // Futures still live when the block ends keep their partials.
        leaked += held.values().sum::<u64>();
        (peak, leaked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_values_until_their_last_use_and_loop_carried_values() {
        let k = r#"module {
  func.func @k() attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %z = arith.constant 0.0 : f32
    %a = tensor.empty() : tensor<16x16xf32>
    %b = linalg.fill ins(%z : f32) outs(%a : tensor<16x16xf32>) -> tensor<16x16xf32>
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %b) -> (tensor<16x16xf32>) {
      %n = arith.addf %acc, %acc : tensor<16x16xf32>
      scf.yield %n : tensor<16x16xf32>
    }
    return
  }
}
"#;
        let (m, diags) = crate::parse(k);
        assert!(diags.is_empty(), "{diags:?}");
        // %a dies at the fill; then %b, the carried value and the new sum (1 KiB each);
        // after the loop %b and %r.
        assert_eq!(per_func(&m), vec![("k".to_string(), 3 * 1024)]);
    }
}
