//! Elementwise ops whose operands and result differ in element type: `to_dtype`, the
//! comparisons (`equal`, `greater`, `lesser`, giving i1) and `where` (an i1 condition).
//!
//! Operands of different element sizes have sticks of different lengths (64 fp16, 128 i1,
//! 32 i32 to a stick), so their tiles differ in the stick and lane dims even where they
//! cover the same elements; [`KernelEmitter::match_lanes`] brings an operand's tile to the
//! result's sticks and lanes before the op. Work division keeps those stick dims whole on
//! every core, so a tile always holds whole rows of every operand.

use super::*;
use crate::ops::Comparison;
use ktir::{CmpFPredicate, CmpIPredicate, Predicate};

/// Bytes of an element type (i1 counts as 1, as it is stored).
fn elem_bytes(elem: ScalarType) -> usize {
    elem.size_bytes()
}

impl KernelEmitter<'_> {
    /// A tile in the result's dim order (`dims`, `shape`; dims the operand lacks are left
    /// out) with its stick and lane dims brought to the result's (`out_dims`,
    /// `out_shape`): when their lane counts differ, the operand's sticks and lanes are
    /// merged into one run of elements, cut or zero-padded to the result's length, and
    /// split into the result's sticks and lanes.
    pub(super) fn match_lanes(
        &mut self,
        value: String,
        dims: &[DimRef],
        shape: Vec<usize>,
        out_dims: &[DimRef],
        out_shape: &[usize],
        elem: ScalarType,
    ) -> Result<(String, Vec<usize>), CompileError> {
        let find = |ds: &[DimRef], kind: Kind| ds.iter().position(|d| d.kind == kind);
        let (Some(ol), Some(l)) = (find(out_dims, Kind::Lane), find(dims, Kind::Lane)) else {
            return Ok((value, shape));
        };
        if dims[l] != out_dims[ol] || shape[l] == out_shape[ol] {
            return Ok((value, shape));
        }
        let (os, s) = match (find(out_dims, Kind::Sticks), find(dims, Kind::Sticks)) {
            (Some(os), Some(s)) if dims[s] == out_dims[os] && s < l => (os, s),
            _ => {
                return Err(self.fail(format!(
                "cannot bring a tile of {shape:?} to the result's sticks and lanes {out_shape:?}"
            )))
            }
        };
        // Lanes moved next to their sticks: [.., sticks, lanes, ..].
        let n = shape.len();
        let mut order: Vec<usize> = (0..n).filter(|&j| j != l).collect();
        order.insert(s + 1, l);
        let joined: Vec<usize> = order.iter().map(|&j| shape[j]).collect();
        let v = self.permute(&value, &shape, &order, elem);
        // Merge them into one run.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for j in 0..n {
            if j == s + 1 {
                if let Some(g) = groups.last_mut() {
                    g.push(j);
                }
            } else {
                groups.push(vec![j]);
            }
        }
        let mut run_shape: Vec<usize> = joined.clone();
        run_shape[s] = joined[s] * joined[s + 1];
        run_shape.remove(s + 1);
        let merged = self.fresh("run");
        self.b.collapse_shape(
            ssa(&merged),
            &val(&v),
            groups.clone(),
            shape_str(&joined, elem),
            shape_str(&run_shape, elem),
        );
        // Cut or pad the run to the result's length.
        let want = out_shape[os] * out_shape[ol];
        let have = run_shape[s];
        let mut fitted_shape = run_shape.clone();
        fitted_shape[s] = want;
        let fitted = if have > want {
            let sl = self.fresh("cut");
            self.b.extract_slice(
                ssa(&sl),
                &val(&merged),
                build::static_sizes(&vec![0; run_shape.len()]),
                build::static_sizes(&fitted_shape),
                build::static_sizes(&vec![1; run_shape.len()]),
                shape_str(&run_shape, elem),
                shape_str(&fitted_shape, elem),
            );
            sl
        } else {
            self.zeros_around(&merged, &run_shape, &fitted_shape, elem)
        };
        // Split into the result's sticks and lanes, and put the lanes back last.
        let mut split_shape = fitted_shape.clone();
        split_shape[s] = out_shape[os];
        split_shape.insert(s + 1, out_shape[ol]);
        let split = self.fresh("relaned");
        self.b.expand_shape(
            ssa(&split),
            &val(&fitted),
            groups,
            shape_str(&fitted_shape, elem),
            shape_str(&split_shape, elem),
        );
        // order[i] is the original dim at position i; invert it.
        let back: Vec<usize> = (0..n)
            .map(|j| order.iter().position(|&o| o == j).unwrap_or(j))
            .collect();
        let result_shape: Vec<usize> = back.iter().map(|&i| split_shape[i]).collect();
        let v = self.permute(&split, &split_shape, &back, elem);
        Ok((v, result_shape))
    }

    /// `value` with its dims in the order `order` (result dim `i` is dim `order[i]`).
    fn permute(
        &mut self,
        value: &str,
        shape: &[usize],
        order: &[usize],
        elem: ScalarType,
    ) -> String {
        if order.iter().enumerate().all(|(i, &o)| i == o) {
            return value.to_string();
        }
        let to: Vec<usize> = order.iter().map(|&o| shape[o]).collect();
        let (e, t) = (self.fresh("empty"), self.fresh("t"));
        let empty = self.b.empty(ssa(&e), shape_str(&to, elem));
        self.b.transpose(
            ssa(&t),
            &val(value),
            shape_str(shape, elem),
            &empty,
            shape_str(&to, elem),
            order.to_vec(),
        );
        t
    }

    /// `value` (shape `shape`) at the origin of a zero tensor of shape `padded`, for any
    /// element type.
    pub(super) fn zeros_around(
        &mut self,
        value: &str,
        shape: &[usize],
        padded: &[usize],
        elem: ScalarType,
    ) -> String {
        let ty = shape_str(padded, elem);
        let (z, ins) = (self.fresh("zeros"), self.fresh("padded"));
        self.b
            .constant(ssa(&z), Literal::DenseSplat(0.0), ty.clone());
        self.b.insert_slice(
            ssa(&ins),
            &val(value),
            &val(&z),
            build::static_sizes(&vec![0; shape.len()]),
            build::static_sizes(shape),
            build::static_sizes(&vec![1; shape.len()]),
            shape_str(shape, elem),
            ty,
        );
        ins
    }

    /// One typed op on whole tiles of shape `shape`: `args` have the element types `elems`,
    /// the result `out_elem`.
    pub(super) fn typed_pointwise(
        &mut self,
        args: &[String],
        elems: &[ScalarType],
        shape: &[usize],
        out_elem: ScalarType,
    ) -> Result<String, CompileError> {
        let kind = self.op.kind;
        let op = kind.name();
        let want = match kind {
            DeviceOpKind::ToDtype => 1,
            DeviceOpKind::Where => 3,
            _ => 2,
        };
        if args.len() != want || elems.len() != want {
            return Err(self.fail(format!(
                "'{op}' expects {want} operand(s), found {}",
                args.len()
            )));
        }
        match kind {
            DeviceOpKind::ToDtype => self.convert(&args[0], shape, elems[0], out_elem),
            DeviceOpKind::Where => {
                if elems[0] != ScalarType::I1 || elems[1] != out_elem || elems[2] != out_elem {
                    return Err(self.fail(format!(
                        "'where' needs an i1 condition and {} values, found {}, {} and {}",
                        out_elem.name(),
                        elems[0].name(),
                        elems[1].name(),
                        elems[2].name()
                    )));
                }
                let r = self.fresh("chosen");
                self.b.select(
                    ssa(&r),
                    &val(&args[0]),
                    &val(&args[1]),
                    &val(&args[2]),
                    Some(shape_str(shape, ScalarType::I1)),
                    shape_str(shape, out_elem),
                );
                Ok(r)
            }
            DeviceOpKind::Compare(c) => {
                if elems[0] != elems[1] || out_elem != ScalarType::I1 {
                    return Err(self.fail(format!(
                        "'{op}' compares two operands of one type into i1, found {} and {} into {}",
                        elems[0].name(),
                        elems[1].name(),
                        out_elem.name()
                    )));
                }
                Ok(self.compare(c, &args[0], &args[1], shape, elems[0]))
            }
            DeviceOpKind::BatchMatmul
            | DeviceOpKind::Unary(_)
            | DeviceOpKind::Binary(_)
            | DeviceOpKind::Reduce(_)
            | DeviceOpKind::TopK
            | DeviceOpKind::Movement(_) => Err(self.fail(format!(
                "'{op}' is not an elementwise op whose operand types differ"
            ))),
        }
    }

    /// `a <op> b` elementwise into i1: ordered float comparisons (false when either side
    /// is NaN, as the reference compares) or signed integer ones.
    pub(super) fn compare(
        &mut self,
        op: Comparison,
        a: &str,
        b: &str,
        shape: &[usize],
        elem: ScalarType,
    ) -> String {
        let predicate = match (op, elem.is_float()) {
            (Comparison::Equal, true) => Predicate::Float(CmpFPredicate::Oeq),
            (Comparison::Greater, true) => Predicate::Float(CmpFPredicate::Ogt),
            (Comparison::Lesser, true) => Predicate::Float(CmpFPredicate::Olt),
            (Comparison::Equal, false) => Predicate::Int(CmpIPredicate::Eq),
            (Comparison::Greater, false) => Predicate::Int(CmpIPredicate::Sgt),
            (Comparison::Lesser, false) => Predicate::Int(CmpIPredicate::Slt),
        };
        let r = self.fresh("cmp");
        self.b
            .compare(ssa(&r), predicate, &val(a), &val(b), shape_str(shape, elem));
        r
    }

    /// `x` (a tile of `from`) converted to `to`, as Cast converts: floats round to the
    /// nearest, floats to integers truncate, anything to bool is "not zero" (NaN is true),
    /// bool to a number is 0 or 1.
    pub(super) fn convert(
        &mut self,
        x: &str,
        shape: &[usize],
        from: ScalarType,
        to: ScalarType,
    ) -> Result<String, CompileError> {
        if from == to {
            return Ok(x.to_string());
        }
        let (src, dst) = (shape_str(shape, from), shape_str(shape, to));
        let cast = |this: &mut Self, name: &str, v: &str, a: &Type, b: &Type| {
            let r = this.fresh("cast");
            this.b.cast(ssa(&r), name, &val(v), a.clone(), b.clone());
            r
        };
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => {
                let (fb, tb) = (elem_bytes(from), elem_bytes(to));
                if tb > fb {
                    cast(self, "arith.extf", x, &src, &dst)
                } else if tb < fb {
                    cast(self, "arith.truncf", x, &src, &dst)
                } else {
                    // Same width, another format (f16 and bf16): through f32, exactly.
                    let wide = shape_str(shape, ScalarType::F32);
                    let w = cast(self, "arith.extf", x, &src, &wide);
                    cast(self, "arith.truncf", &w, &wide, &dst)
                }
            }
            (true, false) if to == ScalarType::I1 => {
                let z = self.fresh("zero");
                self.b
                    .constant(ssa(&z), Literal::DenseSplat(0.0), src.clone());
                let r = self.fresh("nonzero");
                let p = Predicate::Float(CmpFPredicate::Une);
                self.b.compare(ssa(&r), p, &val(x), &val(&z), src);
                r
            }
            (true, false) => cast(self, "arith.fptosi", x, &src, &dst),
            (false, true) if from == ScalarType::I1 => cast(self, "arith.uitofp", x, &src, &dst),
            (false, true) => cast(self, "arith.sitofp", x, &src, &dst),
            (false, false) if to == ScalarType::I1 => {
                let z = self.fresh("zero");
                self.b
                    .constant(ssa(&z), Literal::DenseSplat(0.0), src.clone());
                let r = self.fresh("nonzero");
                let p = Predicate::Int(CmpIPredicate::Ne);
                self.b.compare(ssa(&r), p, &val(x), &val(&z), src);
                r
            }
            (false, false) => {
                let (fb, tb) = (elem_bytes(from), elem_bytes(to));
                if from == ScalarType::I1 {
                    cast(self, "arith.extui", x, &src, &dst)
                } else if tb > fb {
                    cast(self, "arith.extsi", x, &src, &dst)
                } else if tb < fb {
                    cast(self, "arith.trunci", x, &src, &dst)
                } else {
                    return Err(self.fail(format!(
                        "no conversion from {} to {}",
                        from.name(),
                        to.name()
                    )));
                }
            }
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::passes::tests::graph_of;
    use crate::{compile, Options, Target};

    /// The KTIR of a graph, verified, one kernel per op (unfused, so each op's own
    /// lowering shows).
    pub(crate) fn ktir_of(inputs: &str, nodes: &str, outputs: &str) -> String {
        let g = graph_of(inputs, "", nodes, outputs);
        let o = Options {
            fuse: false,
            ..Options::default()
        };
        let c = compile(&g, &Target::spyre32(), &o).unwrap_or_else(|e| panic!("{e}"));
        let text = c.ktir.expect("ktir");
        if let Err(d) = ktir::check(&text) {
            panic!("{}\n{text}", ktir::render_diagnostics("ktir", &d));
        }
        text
    }

    /// The body of the kernel of `op`.
    pub(crate) fn kernel<'a>(text: &'a str, op: &str) -> &'a str {
        let start = text
            .find(&format!("  // {op} ("))
            .unwrap_or_else(|| panic!("no kernel for {op}"));
        let rest = &text[start..];
        let end = rest.find("\n  }\n").map_or(rest.len(), |e| e + 4);
        &rest[..end]
    }

    #[test]
    fn where_on_a_bool_mask_cuts_its_lanes_to_the_values() {
        let text = ktir_of(
            r#"{"name": "c", "dtype": "bool", "shape": [3, 32]}, {"name": "a", "dtype": "f16", "shape": [3, 32]}"#,
            r#"{"name": "sel", "op": "Where", "inputs": ["c", "a", "a"], "outputs": ["y"]}"#,
            r#""y""#,
        );
        let k = kernel(&text, "sel");
        // A row per core: one stick of 128 mask lanes, cut to the values' 64.
        assert!(k.contains("grid = [3]"), "{k}");
        assert!(k.contains("-> tensor<1x1x128xi1>"), "{k}");
        assert!(k.contains("to tensor<64x1xi1>"), "{k}");
        assert!(k.contains(": tensor<1x1x64xi1>, tensor<1x1x64xf16>"), "{k}");
    }

    #[test]
    fn comparisons_and_casts_lower_to_typed_arith() {
        let text = ktir_of(
            r#"{"name": "a", "dtype": "f16", "shape": [4, 8]}, {"name": "b", "dtype": "f16", "shape": [8]}"#,
            r#"{"name": "lt", "op": "Less", "inputs": ["a", "b"], "outputs": ["c"]},
               {"name": "to_i", "op": "Cast", "inputs": ["c"], "outputs": ["ci"], "attrs": {"to": "i32"}},
               {"name": "to_f", "op": "Cast", "inputs": ["ci"], "outputs": ["cf"], "attrs": {"to": "f32"}},
               {"name": "to_b", "op": "Cast", "inputs": ["cf"], "outputs": ["cb"], "attrs": {"to": "bool"}},
               {"name": "eq", "op": "Equal", "inputs": ["ci", "ci"], "outputs": ["e"]}"#,
            r#""cb", "e""#,
        );
        assert!(kernel(&text, "lt").contains("arith.cmpf olt"));
        // The i32 result has 32-lane sticks: the mask's 128 lanes are cut.
        let k = kernel(&text, "to_i");
        assert!(k.contains("arith.extui"), "{k}");
        assert!(k.contains("to tensor<32x1xi1>"), "{k}");
        assert!(kernel(&text, "to_f").contains("arith.sitofp"));
        assert!(kernel(&text, "to_b").contains("arith.cmpf une"));
        // i32 against i32 into a mask of 128 lanes: zero-padded.
        let k = kernel(&text, "eq");
        assert!(k.contains("arith.cmpi eq"), "{k}");
        assert!(
            k.contains("arith.constant dense<0> : tensor<128x1xi32>"),
            "{k}"
        );
    }
}
