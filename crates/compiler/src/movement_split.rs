//! How movement ops (reshape, transpose, expand, slice, concat, restickify) are split over
//! cores.
//!
//! A movement op iterates over its output. A core's slice of the output must come from a
//! box of each input, so an iteration dim can be split only when every input either has a
//! dim that it indexes one-to-one, or broadcasts along it (expand). Stick dims are not
//! split, on either side, so every core moves whole sticks; nor are dims whose device size
//! is padded beyond the host size. The exception is a transpose whose input and output
//! hold their sticks along different dims ([`stick_crossing`]): its kernel works on 2-D
//! blocks of whole sticks, so both stick dims may be split where they are a whole number
//! of sticks, in whole sticks per core. Gather reads its ids and table through views of the
//! whole tensors, so it may split its output anywhere the output is not padded: ids over
//! cores, and each row in whole sticks.

use crate::ops::{DeviceOp, DeviceOpKind, Movement};
use crate::{Compilation, CompileError};

/// Whether a slice or concat keeps every core on its own slice: each core's box of every
/// input is the box of the output it writes, because no dim the op reads whole (the
/// sliced or joined axes) is split over cores. Such an op's result can stay in the
/// scratchpads for readers split like it, and it can join a fused kernel as a step on
/// scratchpad tiles; other movement ops gather from other cores' slices.
pub fn keeps_core_slices(c: &Compilation, op: &DeviceOp, splits: &[usize]) -> bool {
    if !matches!(
        op.kind,
        DeviceOpKind::Movement(Movement::Slice | Movement::Concat)
    ) || splits.len() != op.iteration.len()
    {
        return false;
    }
    op.inputs.iter().all(|x| {
        let Ok(t) = c.ty(x, &op.name) else {
            return false;
        };
        let read = input_access(op, &t.shape);
        t.shape.len() == splits.len()
            && (0..splits.len()).all(|d| splits[d] == 1 || read.contains(&Some(d)))
    })
}

/// Normalises a possibly negative axis for a tensor of rank `r`.
fn axis(a: i64, r: usize) -> usize {
    a.rem_euclid(r.max(1) as i64) as usize
}

/// A transpose's permutation as its kernel applies it (`y[d] = x[perm[d]]`; negative dims
/// count from the end, none given reverses the dims), for an input of rank `rank`. `None`
/// for any other op.
pub fn transpose_perm(op: &DeviceOp, rank: usize) -> Option<Vec<usize>> {
    if op.kind != DeviceOpKind::Movement(Movement::Transpose) {
        return None;
    }
    Some(match op.attrs.get("perm") {
        Some(p) => p.iter().map(|&x| axis(x, rank)).collect(),
        None => (0..rank).rev().collect(),
    })
}

/// For each dim of a movement input of host shape `shape`, the output (iteration) dim it
/// indexes one-to-one, or `None` when the kernel reads the dim whole.
pub fn input_access(op: &DeviceOp, shape: &[usize]) -> Vec<Option<usize>> {
    let out: Vec<usize> = op.iteration.iter().map(|d| d.extent).collect();
    let r = shape.len();
    let none = vec![None; r];
    let DeviceOpKind::Movement(kind) = op.kind else {
        return none;
    };
    let same_rank = |v: Vec<Option<usize>>| if out.len() == r { v } else { none.clone() };
    match kind {
        Movement::Restickify => same_rank((0..r).map(Some).collect()),
        Movement::Transpose => {
            let perm = transpose_perm(op, r).unwrap_or_default();
            if perm.len() != r {
                return none;
            }
            // y[d] = x[perm[d]]: input dim i is read at the output dim d with perm[d] = i.
            same_rank((0..r).map(|i| perm.iter().position(|&p| p == i)).collect())
        }
        Movement::Slice => {
            let starts = op.attrs.get("starts").map(Vec::len).unwrap_or(0);
            let sliced: Vec<usize> = match op.attrs.get("axes") {
                Some(a) => a.iter().map(|&x| axis(x, r)).collect(),
                None => (0..starts).collect(),
            };
            same_rank(
                (0..r)
                    .map(|i| (!sliced.contains(&i)).then_some(i))
                    .collect(),
            )
        }
        Movement::Concat => {
            let a = match op.attrs.get("axis").map(Vec::as_slice) {
                Some([a]) => axis(*a, r),
                _ => 0,
            };
            same_rank((0..r).map(|i| (i != a).then_some(i)).collect())
        }
        Movement::Expand => {
            // numpy broadcasting: input dims align right with the output's.
            let Some(lead) = out.len().checked_sub(r) else {
                return none;
            };
            (0..r)
                .map(|i| (shape[i] == out[lead + i] && shape[i] > 1).then_some(lead + i))
                .collect()
        }
        Movement::Reshape => {
            // Input dim i and output dim j index the same elements when the dims before
            // them hold the same number of elements and they have the same size: both are
            // then the same digit of the flat index.
            let mut v = none;
            let mut before_in = 1usize;
            for (i, &n) in shape.iter().enumerate() {
                let mut before_out = 1usize;
                for (j, &m) in out.iter().enumerate() {
                    if before_out == before_in && m == n && n > 1 {
                        v[i] = Some(j);
                        break;
                    }
                    before_out = before_out.saturating_mul(m);
                }
                before_in = before_in.saturating_mul(n);
            }
            v
        }
        // Gather reads an indirect set of rows.
        Movement::Gather => none,
    }
}

/// For a transpose (or restickify) whose input and output have their sticks along
/// different dims: the iteration dims of the input's stick dim and of the output's, in that
/// order. Such an op is moved in 2-D blocks of whole sticks on both sides (each block read
/// in the input's sticks, transposed in the scratchpad, written in the output's), so both
/// dims may be cut, in whole sticks, over cores and in time. `None` for every other op.
pub fn stick_crossing(c: &Compilation, op: &DeviceOp) -> Option<(usize, usize)> {
    let DeviceOpKind::Movement(Movement::Transpose | Movement::Restickify) = op.kind else {
        return None;
    };
    let ([input], [output]) = (op.inputs.as_slice(), op.outputs.as_slice()) else {
        return None;
    };
    let (li, lo) = (c.layouts.get(input)?, c.layouts.get(output)?);
    // A stick dim of one element (a sparse layout) holds no run of elements to transpose.
    let usable = |l: &crate::Layout| {
        l.device_size.len() >= 2
            && l.stick_host_dim()
                .is_some_and(|h| l.host_shape.get(h).is_some_and(|&n| n > 1))
    };
    if !usable(li) || !usable(lo) || li.elems_per_stick != lo.elems_per_stick {
        return None;
    }
    let a = input_access(op, &li.host_shape)
        .get(li.stick_host_dim()?)
        .copied()
        .flatten()?;
    let b = crate::ops::access_map(op, 1, &lo.host_shape)
        .get(lo.stick_host_dim()?)
        .copied()
        .flatten()?;
    (a != b).then_some((a, b))
}

/// Elements per split unit of each iteration dim of a movement op beyond what the
/// iteration says: the input's stick dim of a [`stick_crossing`] op is cut in whole input
/// sticks (1 for every other dim, whose unit the iteration gives).
pub fn split_granule(c: &Compilation, op: &DeviceOp) -> Vec<usize> {
    let mut g = vec![1; op.iteration.len()];
    if let Some((a, b)) = stick_crossing(c, op) {
        let eps = crate::workdiv::op_eps(c, op);
        for d in [a, b] {
            if let Some(x) = g.get_mut(d) {
                if !op.iteration[d].in_sticks {
                    *x = eps;
                }
            }
        }
    }
    g
}

/// Per iteration dim of a movement op: why it must not be split (`None` when it may be).
pub fn fixed_dims(c: &Compilation, op: &DeviceOp) -> Result<Vec<Option<String>>, CompileError> {
    let n = op.iteration.len();
    if op.kind == DeviceOpKind::Movement(Movement::Gather) {
        // Each core gathers its own ids and, of each id's row, its own whole sticks: the
        // ids and the table are read through views of the whole tensors, indirectly, and
        // only the output is cut into boxes.
        let out = match op.outputs.first() {
            Some(o) => Some(c.layout(o, &op.name)?),
            None => None,
        };
        return Ok((0..n)
            .map(|d| {
                out.filter(|l| padded(l, d))
                    .map(|_| "the output is padded along it".to_string())
            })
            .collect());
    }
    let mut fixed: Vec<Option<String>> = vec![None; n];
    let out_layout = match op.outputs.first() {
        Some(o) => Some(c.layout(o, &op.name)?),
        None => None,
    };
    let out_stick = out_layout
        .and_then(|l| l.stick_host_dim())
        .unwrap_or(n.saturating_sub(1));
    // A transpose moved in blocks may cut both stick dims, where they hold whole sticks.
    let crossing = stick_crossing(c, op);
    let eps = crate::workdiv::op_eps(c, op).max(1);
    let whole_sticks = |d: usize| {
        crossing.is_some_and(|(a, b)| d == a || d == b)
            && op.iteration.get(d).is_some_and(|x| x.extent % eps == 0)
    };
    if let Some(f) = fixed.get_mut(out_stick) {
        if !whole_sticks(out_stick) {
            *f = Some("it is the output's stick dim".into());
        }
    }
    for input in &op.inputs {
        let layout = c.layout(input, &op.name)?;
        let shape = &layout.host_shape;
        let access = input_access(op, shape);
        let stick = layout.stick_host_dim();
        let lead = n.saturating_sub(shape.len());
        for (d, f) in fixed.iter_mut().enumerate() {
            if f.is_some() {
                continue;
            }
            match access.iter().position(|&a| a == Some(d)) {
                Some(i) if Some(i) == stick && !whole_sticks(d) => {
                    *f = Some(format!("it is the stick dim of '{input}'"));
                }
                Some(i) if Some(i) == stick => {}
                Some(i) if padded(layout, i) => {
                    *f = Some(format!("'{input}' is padded along it"));
                }
                Some(_) => {}
                // An expand input broadcasts along dims it lacks or holds once.
                None if op.kind == DeviceOpKind::Movement(Movement::Expand)
                    && (d < lead || shape[d - lead] == 1) => {}
                None => *f = Some(format!("'{input}' is not read as a box along it")),
            }
        }
    }
    if let Some(l) = out_layout {
        for (d, f) in fixed.iter_mut().enumerate() {
            if f.is_none() && padded(l, d) {
                *f = Some("the output is padded along it".into());
            }
        }
    }
    Ok(fixed)
}

/// Whether host dim `h` of a layout has more device slots than host elements (beyond the
/// stick padding of the last dim), so a split would not map to a box of elements.
fn padded(layout: &crate::Layout, h: usize) -> bool {
    let Some(&host) = layout.host_shape.get(h) else {
        return false;
    };
    let device: usize = layout
        .device_size
        .iter()
        .zip(&layout.host_dim_of_device_dim)
        .filter(|(_, hd)| **hd == Some(h))
        .map(|(s, _)| *s)
        .product();
    device != host && Some(h) != layout.stick_host_dim()
}

#[cfg(test)]
mod tests {
    use crate::passes::tests::{graph_of, upto};
    use crate::{compile, Options, Target};

    /// Work division of a one-node graph: (splits, rule) of its only device op.
    fn divide(
        inputs: &[&[usize]],
        op: &str,
        attrs: &str,
        options: Options,
    ) -> Result<(Vec<usize>, String), crate::CompileError> {
        let names: Vec<String> = (0..inputs.len()).map(|i| format!("\"x{i}\"")).collect();
        let decls: Vec<String> = inputs
            .iter()
            .enumerate()
            .map(|(i, s)| format!(r#"{{"name": "x{i}", "dtype": "f16", "shape": {s:?}}}"#))
            .collect();
        let g = graph_of(
            &decls.join(", "),
            "",
            &format!(
                r#"{{"name": "m", "op": "{op}", "inputs": [{}], "outputs": ["y"], "attrs": {attrs}}}"#,
                names.join(", ")
            ),
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &options)?;
        let d = &c.divisions[0];
        Ok((d.splits.clone(), d.rule.clone()))
    }

    #[test]
    fn transpose_splits_dims_that_are_not_sticks_on_either_side() {
        // [3, 8, 130] -> [3, 130, 8]: d1 is the input's stick dim, d2 the output's.
        let (s, rule) = divide(
            &[&[3, 8, 130]],
            "Transpose",
            r#"{"perm": [0, 2, 1]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![3, 1, 1]);
        assert!(rule.contains("d1 (it is the stick dim of 'x0')"), "{rule}");
        let (s, _) = divide(
            &[&[4, 8, 64]],
            "Transpose",
            r#"{"perm": [1, 0, 2]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![8, 4, 1]);
    }

    /// Work division of one Gather of `ids` ids from a [100, `width`] f16 table.
    fn divide_gather(ids: usize, width: usize) -> (Vec<usize>, usize) {
        let g = graph_of(
            &format!(
                r#"{{"name": "table", "dtype": "f16", "shape": [100, {width}]}}, {{"name": "ids", "dtype": "i64", "shape": [{ids}]}}"#
            ),
            "",
            r#"{"name": "g", "op": "Gather", "inputs": ["table", "ids"], "outputs": ["y"], "attrs": {"axis": 0}}"#,
            r#""y""#,
        );
        let c = compile(&g, &Target::spyre32(), &upto("work-division")).unwrap();
        let d = &c.divisions[0];
        (d.splits.clone(), d.cores_used)
    }

    #[test]
    fn gather_splits_its_ids_and_the_sticks_of_each_row() {
        // Many ids: the ids are shared out.
        let (s, cores) = divide_gather(64, 256);
        assert!(s[0] > 1, "{s:?}");
        assert_eq!(cores, 32, "{s:?}");
        // One id: its row's sticks are (32 sticks of 64 f16 elements).
        let (s, cores) = divide_gather(1, 2048);
        assert_eq!(s.iter().product::<usize>(), cores);
        assert!(cores > 1 && s[0] == 1, "{s:?}");
    }

    #[test]
    fn reshape_splits_only_dims_that_line_up() {
        let (s, rule) = divide(
            &[&[4, 6, 192]],
            "Reshape",
            r#"{"shape": [4, 6, 3, 64]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![4, 6, 1, 1]);
        assert!(
            rule.contains("d2 ('x0' is not read as a box along it)"),
            "{rule}"
        );
        let (s, _) = divide(
            &[&[2, 12, 64]],
            "Reshape",
            r#"{"shape": [24, 64]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![1, 1]);
    }

    #[test]
    fn slice_and_concat_keep_their_axis_whole_and_expand_splits_broadcast_dims() {
        let (s, _) = divide(
            &[&[8, 6, 128]],
            "Slice",
            r#"{"starts": [2], "ends": [6], "axes": [1]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![8, 1, 1]);
        let (s, _) = divide(
            &[&[6, 3, 64], &[6, 5, 64]],
            "Concat",
            r#"{"axis": 1}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s, vec![6, 1, 1]);
        let (s, _) = divide(
            &[&[1, 5, 1, 64]],
            "Expand",
            r#"{"shape": [2, 5, 3, 64]}"#,
            upto("work-division"),
        )
        .unwrap();
        assert_eq!(s.iter().product::<usize>(), 30);
    }

    #[test]
    fn a_hint_that_splits_a_whole_dim_is_refused_with_the_reason() {
        let mut options = upto("work-division");
        options.hints.insert("m".into(), vec![1, 2, 1]);
        let e = divide(
            &[&[3, 8, 130]],
            "Transpose",
            r#"{"perm": [0, 2, 1]}"#,
            options,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "hint splits dim 'd1' by 2, but it must stay whole: it is the stick dim of 'x0'"
            ),
            "{e}"
        );
    }
}
