//! Matmul epilogues: a matmul and the pointwise ops right after it (a bias or residual
//! add, an activation, a cast) lowered as one kernel (see [`crate::fusion`]).
//!
//! The kernel is the matmul's own, with the epilogue's other inputs as extra operands
//! indexed like the matmul's output (batch, M and N; a bias lacking M is broadcast). Each
//! output block, once complete (after its K loop and, for a K split, its reduction on the
//! group's leader), goes through the members in order on the scratchpad and only the last
//! member's result is stored: the matmul's result and the members' intermediates never
//! travel to DRAM and back, and the members take no launch of their own.
//!
//! The time plan is searched for the whole kernel, so the epilogue's extra tiles count
//! against the scratchpad budget like the matmul's own.

use super::*;
use crate::fusion::FusionGroup;

/// The device op a matmul epilogue kernel is built from: the matmul (name, iteration and
/// work division kept) reading A, B and every epilogue input that is not a value of the
/// chain, and writing the last member's result.
fn epilogue_op(c: &Compilation, group: &FusionGroup) -> Result<DeviceOp, CompileError> {
    let fail = |m: &str| CompileError::at(&group.name, m);
    let matmul = c
        .ops
        .get(group.first)
        .ok_or_else(|| fail("no matmul heads it"))?;
    let members = c
        .ops
        .get(group.first + 1..group.first + group.len)
        .ok_or_else(|| fail("its members are not all device ops"))?;
    if !matmul.kind.is_matmul() || members.is_empty() {
        return Err(fail(
            "an epilogue kernel is a matmul and at least one pointwise op",
        ));
    }
    let mut chain: Vec<&String> = matmul.outputs.iter().collect();
    let mut inputs = matmul.inputs.clone();
    for member in members {
        for t in &member.inputs {
            if !chain.contains(&t) && !inputs.contains(t) {
                inputs.push(t.clone());
            }
        }
        chain.extend(&member.outputs);
    }
    let last = members
        .last()
        .and_then(|m| m.outputs.first())
        .ok_or_else(|| fail("its last member has no result"))?;
    Ok(DeviceOp {
        name: matmul.name.clone(),
        kind: matmul.kind,
        inputs,
        outputs: vec![last.clone()],
        iteration: matmul.iteration.clone(),
        attrs: matmul.attrs.clone(),
    })
}

/// The key under which a matmul epilogue kernel's time plan is remembered: the matmul
/// kernel's key over the epilogue op, and each member's kind and attributes (which the
/// plan's working set depends on).
fn epilogue_plan_key(
    c: &Compilation,
    op: &DeviceOp,
    group: &FusionGroup,
    kernel: &Kernel,
    held: u64,
    double: bool,
) -> String {
    let mut key = crate::artifact_cache::plan_key(c, op, group.first, kernel, held, double);
    for member in c
        .ops
        .get(group.first + 1..group.first + group.len)
        .unwrap_or(&[])
    {
        key.push_str(&format!("epilogue {:?} {:?}\n", member.kind, member.attrs));
    }
    key
}

/// The verified kernel of a matmul and its epilogue, its time plan taken from `recipes`
/// when a kernel with the same key was built before.
pub(super) fn epilogue_kernel(
    c: &Compilation,
    group: &FusionGroup,
    kernel: &Kernel,
    held: u64,
    double: bool,
    recipes: &mut tiling::Recipes,
) -> Result<ktir::Func, CompileError> {
    let op = epilogue_op(c, group)?;
    let key = epilogue_plan_key(c, &op, group, kernel, held, double);
    let f = tiling::emit_kernel_with(c, &op, group.first, kernel, held, double, &key, recipes)?;
    verified(&op, f)
}

/// The kernel of matmul epilogue `group` when it builds, verifies and fits the
/// scratchpad budget at some time cut; otherwise why not. `recipes` keeps the plans found,
/// so a repeated layer's epilogue is searched once.
pub(crate) fn epilogue_fits(
    c: &Compilation,
    held: &[u64],
    group: &FusionGroup,
    double: bool,
    recipes: &mut tiling::Recipes,
) -> Result<Result<ktir::Func, String>, CompileError> {
    let held = held.get(group.first).copied().unwrap_or(0);
    let kernel = Kernel {
        func: format!("k{}_{}", group.first, ident(&group.name)),
        op: group.name.clone(),
        args: kernel_args(c, &c.ops[group.ops()]),
        ops: group.ops(),
    };
    let fused = match epilogue_kernel(c, group, &kernel, held, double, recipes) {
        Ok(f) => f,
        Err(e) => {
            return Ok(Err(format!(
                "its fused kernel does not build: {}",
                e.message
            )))
        }
    };
    // The epilogue's tiles share the matmul's scratchpad budget: where they force a finer
    // time cut (smaller blocks, more re-reads of A and B), the round trip saved is not
    // worth it.
    let matmul = &c.ops[group.first];
    let alone = single_kernel(c, group.first, matmul);
    let key = crate::artifact_cache::plan_key(c, matmul, group.first, &alone, held, double);
    let own =
        tiling::emit_kernel_with(c, matmul, group.first, &alone, held, double, &key, recipes)?;
    let (steps, own_steps) = (
        tiling::time_steps(&fused.body),
        tiling::time_steps(&own.body),
    );
    if steps > own_steps {
        return Ok(Err(format!(
            "its epilogue's tiles would cut the matmul into {steps} time steps instead of {own_steps}"
        )));
    }
    Ok(Ok(fused))
}

impl KernelEmitter<'_> {
    /// Runs the epilogue (when the kernel has one) on `value`, one complete output block
    /// of the matmul in the output's device order (`dims`, `shape`, element type `elem`).
    /// Returns the value to store and its element type.
    pub(super) fn apply_epilogue(
        &mut self,
        value: String,
        dims: &[DimRef],
        shape: &[usize],
        elem: ScalarType,
    ) -> Result<(String, ScalarType), CompileError> {
        if self.epilogue.is_empty() {
            return Ok((value, elem));
        }
        let matmul_out = self
            .c
            .ops
            .get(self.index)
            .and_then(|m| m.outputs.first())
            .cloned()
            .ok_or_else(|| self.fail("the epilogue's matmul has no result"))?;
        // Values of the chain so far: (tensor, SSA name, element type).
        let mut chain: Vec<(String, String, ScalarType)> = vec![(matmul_out, value, elem)];
        let members = self.epilogue;
        let whole = self.op;
        let extra = 2..self.operands.len().saturating_sub(1);
        for member in members {
            let out = member
                .outputs
                .first()
                .ok_or_else(|| CompileError::at(&member.name, "has no result"))?;
            let out_elem = elem_type(self.c.layout(out, &member.name)?.dtype);
            let (mut args, mut elems) = (Vec::new(), Vec::new());
            for t in &member.inputs {
                if let Some((_, v, e)) = chain.iter().rev().find(|x| &x.0 == t) {
                    args.push(v.clone());
                    elems.push(*e);
                    continue;
                }
                let i = extra
                    .clone()
                    .find(|&i| &self.operands[i].tensor == t)
                    .ok_or_else(|| {
                        CompileError::at(
                            &member.name,
                            format!("epilogue input '{t}' is not an operand of the kernel"),
                        )
                    })?;
                elems.push(self.operands[i].elem);
                args.push(self.input_as(i, dims, shape)?);
            }
            let typed = member.kind.is_typed_pointwise();
            if let Some(e) = elems.iter().find(|&&e| e != out_elem).filter(|_| !typed) {
                return Err(CompileError::at(
                    &member.name,
                    format!(
                        "an operand is {} but the result is {}; '{}' keeps the element type",
                        e.name(),
                        out_elem.name(),
                        member.kind
                    ),
                ));
            }
            // The member's own kind and attributes pick its arithmetic.
            self.op = member;
            let result = if typed {
                self.typed_pointwise(&args, &elems, shape, out_elem)
            } else {
                self.elementwise(member.kind, &args, &shape_str(shape, out_elem))
            };
            self.op = whole;
            chain.push((out.clone(), result?, out_elem));
        }
        let (_, v, e) = chain
            .pop()
            .ok_or_else(|| self.fail("the epilogue has no result"))?;
        Ok((v, e))
    }
}
