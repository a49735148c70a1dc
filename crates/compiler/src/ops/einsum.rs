//! Einsum as transposes, reshapes, batched matmuls and sums.
//!
//! The equation is parsed by the graph crate's [`graph::einsum_plan`] (explicit or implicit
//! output, ellipses, repeated labels), so the device and the reference read it alike. Then:
//!
//! 1. each operand's repeated labels (a diagonal, `ii->i`) are taken by a `where` with a
//!    constant identity mask and a sum over the second axis;
//! 2. an axis of size 1 that broadcasts against a larger one is expanded;
//! 3. the operands are contracted left to right, two at a time: labels neither operand
//!    shares and nothing later needs are summed first; then, with `batch` the shared labels
//!    kept, `k` the shared labels summed, `m` and `n` the rest of each side, the operands are
//!    transposed and reshaped to `[batch, m, k]` and `[batch, k, n]` and multiplied on the
//!    PE array;
//! 4. the last result (or the single operand, its unneeded labels summed) is transposed to
//!    the output's label order and reshaped into the output.
//!
//! A tensor summed to nothing is held as `[1]` with a "unit" label of size 1 that no
//! operand names, so ranks and label lists always agree.

use super::*;

/// A tensor of the decomposition with the label of each axis.
struct Term {
    name: String,
    labels: Vec<usize>,
}

impl Builder<'_> {
    /// Einsum by decomposition (see the module comment).
    pub(super) fn einsum(&mut self) -> Result<(), CompileError> {
        let eq = match self.node.attrs.get("equation") {
            Some(AttrValue::String(s)) => s.clone(),
            _ => return Err(self.err("Einsum needs the string attribute 'equation'")),
        };
        let inputs: Vec<String> = self.node.inputs.clone();
        if inputs.is_empty() || inputs.iter().any(|s| s.is_empty()) {
            return Err(self.err(format!("Einsum '{eq}' needs every operand named")));
        }
        let y = self.output()?;
        let yt = self.ty(&y)?;
        let types: Vec<TensorType> = inputs
            .iter()
            .map(|i| self.ty(i))
            .collect::<Result<_, _>>()?;
        let shapes: Vec<&[usize]> = types.iter().map(|t| t.shape.as_slice()).collect();
        let plan = graph::einsum_plan(&eq, &shapes)
            .map_err(|e| self.err(format!("Einsum '{eq}': {e}")))?;
        if let Some(t) = types.iter().find(|t| !t.dtype.is_float()) {
            return Err(self.err(format!(
                "Einsum '{eq}' of {} operands: the device contracts float types only",
                t.dtype.name()
            )));
        }
        let mut sizes = plan.sizes.clone();
        let mut terms = Vec::with_capacity(inputs.len());
        for (i, (x, labels)) in inputs.iter().zip(&plan.operands).enumerate() {
            let t = self.einsum_distinct(i, x.clone(), labels.clone(), &mut sizes)?;
            let t = self.einsum_full(i, t, &sizes)?;
            terms.push(t);
        }
        let mut rest = terms.into_iter();
        let Some(mut acc) = rest.next() else {
            return Err(self.err(format!("Einsum '{eq}' has no operands")));
        };
        let later: Vec<Vec<usize>> = plan.operands.iter().skip(1).cloned().collect();
        for (j, b) in rest.enumerate() {
            let mut keep: Vec<usize> = plan.output.clone();
            for l in later.iter().skip(j + 1) {
                keep.extend(l);
            }
            acc = self.einsum_pair(j, acc, b, &keep, plan.sizes.len(), &mut sizes)?;
        }
        // Labels the output does not name are summed away.
        let drop: Vec<usize> = acc
            .labels
            .iter()
            .copied()
            .filter(|l| !plan.output.contains(l) && *l < plan.sizes.len())
            .collect();
        let acc = self.einsum_sum(acc, &drop, "sum", &mut sizes)?;
        // Output labels first, in order, then unit labels (size 1, dropped by the reshape).
        let mut perm: Vec<usize> = plan
            .output
            .iter()
            .filter_map(|l| acc.labels.iter().position(|a| a == l))
            .collect();
        let units: Vec<usize> = (0..acc.labels.len())
            .filter(|a| !perm.contains(a))
            .collect();
        perm.extend(units);
        let ordered = self.transposed("ordered", acc.name, &perm, None)?;
        self.reshaped("result", ordered, yt.shape, Some(y))?;
        Ok(())
    }

    /// Operand `i` with each repeated label taken once (its diagonal).
    fn einsum_distinct(
        &mut self,
        i: usize,
        x: String,
        labels: Vec<usize>,
        sizes: &mut Vec<usize>,
    ) -> Result<Term, CompileError> {
        let mut t = Term { name: x, labels };
        if t.labels.is_empty() {
            // A scalar operand: one axis of a unit label.
            let unit = new_unit(sizes);
            let name = self.reshaped(&format!("scalar{i}"), t.name, vec![1], None)?;
            return Ok(Term {
                name,
                labels: vec![unit],
            });
        }
        let mut step = 0;
        while let Some((a, b)) = first_repeat(&t.labels) {
            let xt = self.ty(&t.name)?;
            let n = xt.shape[a];
            self.table("diagonal mask", n, n)?;
            let mut mask_shape = vec![1; xt.shape.len()];
            mask_shape[a] = n;
            mask_shape[b] = n;
            let mask: Vec<f32> = (0..n * n)
                .map(|f| f32::from(u8::from(f / n == f % n)))
                .collect();
            let m = self.constant(
                &format!("diagonal_mask{i}_{step}"),
                TensorType {
                    dtype: DType::Bool,
                    shape: mask_shape,
                },
                graph::InitSpec::Data(mask),
            );
            let zero = self.constant(
                &format!("zero{i}_{step}"),
                TensorType {
                    dtype: xt.dtype,
                    shape: vec![1],
                },
                graph::InitSpec::Zeros,
            );
            let sel = self.temp(&format!("diagonal{i}_{step}"), xt.clone());
            self.push(
                Some(&format!("diagonal{i}_{step}")),
                DeviceOpKind::Where,
                vec![m, t.name, zero],
                sel.clone(),
                pointwise_iteration(&xt.shape),
            );
            // Summing the second axis of the pair leaves each diagonal element once.
            let mut labels = t.labels.clone();
            let dup = new_unit(sizes);
            labels[b] = dup;
            t = self.einsum_sum(
                Term { name: sel, labels },
                &[dup],
                &format!("diagonal_sum{i}_{step}"),
                sizes,
            )?;
            step += 1;
        }
        Ok(t)
    }

    /// `t` with every axis at its label's size: an axis of 1 that broadcasts is expanded.
    fn einsum_full(&mut self, i: usize, t: Term, sizes: &[usize]) -> Result<Term, CompileError> {
        let xt = self.ty(&t.name)?;
        let full: Vec<usize> = t.labels.iter().map(|&l| label_size(sizes, l)).collect();
        if xt.shape == full {
            return Ok(t);
        }
        let y = self.temp(
            &format!("broadcast{i}"),
            TensorType {
                dtype: xt.dtype,
                shape: full,
            },
        );
        self.push_movement(
            &format!("broadcast{i}"),
            Movement::Expand,
            t.name,
            y.clone(),
            &[],
        )?;
        Ok(Term {
            name: y,
            labels: t.labels,
        })
    }

    /// `t` summed over the axes labelled `drop` (moved last, merged, one `sum`).
    fn einsum_sum(
        &mut self,
        t: Term,
        drop: &[usize],
        step: &str,
        sizes: &mut Vec<usize>,
    ) -> Result<Term, CompileError> {
        if drop.is_empty() {
            return Ok(t);
        }
        let xt = self.ty(&t.name)?;
        let kept: Vec<usize> = (0..t.labels.len())
            .filter(|&a| !drop.contains(&t.labels[a]))
            .collect();
        let gone: Vec<usize> = (0..t.labels.len())
            .filter(|&a| drop.contains(&t.labels[a]))
            .collect();
        let perm: Vec<usize> = kept.iter().chain(&gone).copied().collect();
        let moved = self.transposed(&format!("{step}_last"), t.name, &perm, None)?;
        let mut rows: Vec<usize> = kept.iter().map(|&a| xt.shape[a]).collect();
        rows.push(gone.iter().map(|&a| xt.shape[a]).product());
        let merged = self.reshaped(&format!("{step}_merged"), moved, rows.clone(), None)?;
        let mut reduced_shape = rows.clone();
        if let Some(l) = reduced_shape.last_mut() {
            *l = 1;
        }
        let reduced = self.temp(
            step,
            TensorType {
                dtype: xt.dtype,
                shape: reduced_shape,
            },
        );
        self.push(
            Some(step),
            Reduction::Sum,
            vec![merged],
            reduced.clone(),
            reduction_iteration(&rows),
        );
        let mut labels: Vec<usize> = kept.iter().map(|&a| t.labels[a]).collect();
        if labels.is_empty() {
            labels.push(new_unit(sizes));
            return Ok(Term {
                name: reduced,
                labels,
            });
        }
        let shape: Vec<usize> = kept.iter().map(|&a| xt.shape[a]).collect();
        let name = self.reshaped(&format!("{step}_result"), reduced, shape, None)?;
        Ok(Term { name, labels })
    }

    /// The contraction of `a` and `b`, keeping the labels in `keep` (see the module comment).
    /// `n_plan` counts the plan's own labels.
    #[allow(clippy::too_many_arguments)]
    fn einsum_pair(
        &mut self,
        j: usize,
        a: Term,
        b: Term,
        keep: &[usize],
        n_plan: usize,
        sizes: &mut Vec<usize>,
    ) -> Result<Term, CompileError> {
        // Unit labels (numbered after the plan's) are never summed: they are size-1
        // placeholders, and summing one would only make another.
        let needed =
            |l: &usize, other: &[usize]| keep.contains(l) || other.contains(l) || *l >= n_plan;
        let a_drop: Vec<usize> = a
            .labels
            .iter()
            .copied()
            .filter(|l| !needed(l, &b.labels))
            .collect();
        let b_drop: Vec<usize> = b
            .labels
            .iter()
            .copied()
            .filter(|l| !needed(l, &a.labels))
            .collect();
        let a = self.einsum_sum(a, &a_drop, &format!("sum_a{j}"), sizes)?;
        let b = self.einsum_sum(b, &b_drop, &format!("sum_b{j}"), sizes)?;
        let shared: Vec<usize> = a
            .labels
            .iter()
            .copied()
            .filter(|l| b.labels.contains(l))
            .collect();
        let batch: Vec<usize> = shared
            .iter()
            .copied()
            .filter(|l| keep.contains(l))
            .collect();
        let k: Vec<usize> = shared
            .iter()
            .copied()
            .filter(|l| !keep.contains(l))
            .collect();
        let m: Vec<usize> = a
            .labels
            .iter()
            .copied()
            .filter(|l| !shared.contains(l))
            .collect();
        let n: Vec<usize> = b
            .labels
            .iter()
            .copied()
            .filter(|l| !shared.contains(l))
            .collect();
        let size = |ls: &[usize]| -> usize { ls.iter().map(|&l| label_size(sizes, l)).product() };
        let (bs, ms, ks, ns) = (size(&batch), size(&m), size(&k), size(&n));
        let lhs: Vec<usize> = batch.iter().chain(&m).chain(&k).copied().collect();
        let rhs: Vec<usize> = batch.iter().chain(&k).chain(&n).copied().collect();
        let a3 = self.einsum_arranged(&format!("lhs{j}"), a, &lhs, vec![bs, ms, ks])?;
        let b3 = self.einsum_arranged(&format!("rhs{j}"), b, &rhs, vec![bs, ks, ns])?;
        let dt = self.ty(&a3)?.dtype;
        let prod = self.temp(
            &format!("product{j}"),
            TensorType {
                dtype: dt,
                shape: vec![bs, ms, ns],
            },
        );
        self.matmul(a3, b3, prod.clone(), Some(&format!("product{j}")))?;
        let labels: Vec<usize> = batch.iter().chain(&m).chain(&n).copied().collect();
        let mut shape: Vec<usize> = labels.iter().map(|&l| label_size(sizes, l)).collect();
        let mut labels = labels;
        if labels.is_empty() {
            labels.push(new_unit(sizes));
            shape.push(1);
        }
        let name = self.reshaped(&format!("product{j}_split"), prod, shape, None)?;
        Ok(Term { name, labels })
    }

    /// `t` with its axes in the order of `order`, reshaped to `shape`.
    fn einsum_arranged(
        &mut self,
        step: &str,
        t: Term,
        order: &[usize],
        shape: Vec<usize>,
    ) -> Result<String, CompileError> {
        let perm: Vec<usize> = order
            .iter()
            .map(|l| t.labels.iter().position(|a| a == l))
            .collect::<Option<_>>()
            .ok_or_else(|| self.err("Einsum: a label went missing in the decomposition"))?;
        let moved = self.transposed(&format!("{step}_order"), t.name, &perm, None)?;
        self.reshaped(step, moved, shape, None)
    }
}

/// The first pair of axes `(a, b)`, `a < b`, with the same label.
fn first_repeat(labels: &[usize]) -> Option<(usize, usize)> {
    labels
        .iter()
        .enumerate()
        .find_map(|(b, l)| labels[..b].iter().position(|x| x == l).map(|a| (a, b)))
}

/// A new label of size 1 that no operand names.
fn new_unit(sizes: &mut Vec<usize>) -> usize {
    sizes.push(1);
    sizes.len() - 1
}

fn label_size(sizes: &[usize], l: usize) -> usize {
    sizes.get(l).copied().unwrap_or(1)
}
