//! A cheap static estimate of how many operations a launch executes, so progress reports
//! have a total to count towards.

use ktir::ast::{Block, Literal, Module, OpKind};
use std::collections::HashMap;

/// Estimates the operations [`crate::Simulator::launch`] executes for `func` over its
/// whole grid: every op of the body once per tile, loop bodies once per iteration when
/// the bounds are `arith.constant`s of the function (once otherwise), the longer branch
/// of an `scf.if`, producer regions once. The per-element regions of `linalg.generic`,
/// `linalg.reduce` and collective combiners are not counted, so a run with numbers that
/// interprets them executes more. `None` when there is no such function.
pub fn estimate_steps(module: &Module, func: &str) -> Option<u64> {
    let f = module.func(func)?;
    let mut constants = HashMap::new();
    collect_constants(&f.body, &mut constants);
    let per_tile = count(&f.body, &constants);
    Some(per_tile.saturating_mul(f.grid_size() as u64))
}

fn collect_constants<'a>(block: &'a Block, out: &mut HashMap<&'a str, i64>) {
    for op in &block.ops {
        if let (
            OpKind::Constant {
                value: Literal::Int(v),
            },
            [name],
        ) = (&op.kind, op.results.as_slice())
        {
            out.insert(name.as_str(), *v);
        }
        for r in op.kind.regions() {
            collect_constants(r, out);
        }
    }
}

fn count(block: &Block, constants: &HashMap<&str, i64>) -> u64 {
    let mut n = 0u64;
    for op in &block.ops {
        n = n.saturating_add(1);
        let inner = match &op.kind {
            OpKind::For {
                lower,
                upper,
                step,
                body,
                ..
            } => {
                let get = |v: &ktir::ast::Value| constants.get(v.name.as_str()).copied();
                let trips = match (get(lower), get(upper), get(step)) {
                    (Some(l), Some(u), Some(s)) if s > 0 && u > l => ((u - l + s - 1) / s) as u64,
                    (Some(_), Some(_), Some(_)) => 0,
                    _ => 1,
                };
                count(body, constants).saturating_mul(trips)
            }
            OpKind::If {
                then_block,
                else_block,
                ..
            } => {
                let t = count(then_block, constants);
                let e = else_block.as_ref().map_or(0, |b| count(b, constants));
                t.max(e)
            }
            OpKind::InterTileProduce { body, .. } => count(body, constants),
            _ => 0,
        };
        n = n.saturating_add(inner);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_with_constant_bounds_multiply_their_bodies() {
        let text = "func.func @f() attributes {grid = [4]} {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c3 = arith.constant 3 : index\n  scf.for %i = %c0 to %c3 step %c1 {\n    %x = arith.addi %i, %c1 : index\n    scf.yield\n  }\n  return\n}\n";
        let (m, _) = ktir::check(text).unwrap_or_else(|d| panic!("{d:?}"));
        // 3 constants + for + return, and 3 iterations of 2 ops, on 4 tiles.
        assert_eq!(estimate_steps(&m, "f"), Some((5 + 3 * 2) * 4));
        assert_eq!(estimate_steps(&m, "nonesuch"), None);
    }
}
