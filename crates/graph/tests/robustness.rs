//! Randomised robustness: odd graphs and corrupted text give errors, never panics, and
//! whenever evaluation succeeds its outputs have the inferred types.

mod common;

use std::collections::BTreeMap;

use common::*;
use graph::{evaluate, load_json, AttrValue, DType, SplitMix64, SUPPORTED_OPS};

struct R(SplitMix64);

impl R {
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize].clone()
    }
}

fn random_attr(r: &mut R, name: &str) -> AttrValue {
    let small = |r: &mut R| r.int(-3, 3);
    match name {
        "to" => AttrValue::String(r.pick(&["f32", "f16", "i8", "bool", "nope"]).into()),
        "approximate" => AttrValue::String(r.pick(&["none", "tanh", "x"]).into()),
        "alpha" | "beta" | "epsilon" | "min" | "max" | "scale" => {
            AttrValue::Float(r.int(-2, 2) as f32 * 0.5)
        }
        "axes" | "perm" | "split" | "starts" | "ends" | "steps" | "shape" | "pads" | "strides"
        | "dilations" | "kernel_shape" => {
            let n = r.below(4) as usize;
            AttrValue::Ints(
                (0..n)
                    .map(|_| {
                        if r.below(10) == 0 {
                            r.pick(&[i64::MIN, i64::MAX, -1, 0])
                        } else {
                            small(r)
                        }
                    })
                    .collect(),
            )
        }
        _ => AttrValue::Int(if r.below(10) == 0 {
            r.pick(&[i64::MIN, i64::MAX])
        } else {
            small(r)
        }),
    }
}

const ATTR_NAMES: &[&str] = &[
    "axis",
    "axes",
    "keepdims",
    "perm",
    "shape",
    "split",
    "starts",
    "ends",
    "steps",
    "alpha",
    "beta",
    "transA",
    "transB",
    "epsilon",
    "min",
    "max",
    "to",
    "approximate",
    "exclusive",
    "reverse",
    "upper",
    "k",
    "group",
    "pads",
    "strides",
    "dilations",
    "kernel_shape",
    "largest",
    "sorted",
    "is_causal",
    "scale",
];

#[test]
fn random_single_node_graphs_never_panic() {
    let mut r = R(SplitMix64::new(2024));
    let mut evaluated = 0;
    for op in SUPPORTED_OPS {
        for _ in 0..200 {
            // Arity from the op table, variadic ports capped at 3 values (or at the
            // required count, for ops with more required inputs).
            let spec = graph::OpKind::from_name(op).unwrap().spec();
            let (lo, hi) = spec.input_arity();
            let hi = hi.min(lo.max(3)) as i64;
            let n_in = r.int(lo as i64, hi) as usize;
            let shared: Vec<usize> = (0..r.below(4)).map(|_| r.below(4) as usize).collect();
            let dtype = r.pick(&[DType::F32, DType::F32, DType::F16, DType::I64]);
            let ins: Vec<Operand> = (0..n_in)
                .map(|i| {
                    if i > 0 && r.below(8) == 0 {
                        return None;
                    }
                    let shape: Vec<usize> = if r.below(10) < 6 {
                        shared.clone()
                    } else {
                        (0..r.below(4)).map(|_| r.below(4) as usize).collect()
                    };
                    let n: usize = shape.iter().product();
                    let d = if r.below(4) == 0 {
                        r.pick(&[DType::F32, DType::I64, DType::Bool])
                    } else {
                        dtype
                    };
                    let data = (0..n).map(|_| r.int(-3, 3) as f32).collect::<Vec<_>>();
                    Some((d, shape, data))
                })
                .collect();
            let n_attrs = r.below(3);
            let attrs: Vec<(&str, AttrValue)> = (0..n_attrs)
                .map(|_| {
                    let name = r.pick(ATTR_NAMES);
                    (name, random_attr(&mut r, name))
                })
                .collect();
            let n_out = match spec.output_arity() {
                (lo, hi) if lo == hi => lo,
                (lo, hi) => r.int(lo as i64, hi.min(3) as i64) as usize,
            };
            let g = one_node(op, &ins, &attrs, n_out);
            if let Ok(types) = g.infer_types() {
                if let Ok(vals) = evaluate(&g, &BTreeMap::new()) {
                    evaluated += 1;
                    for o in &g.outputs {
                        assert_eq!(vals[o].ty(), types[o], "{op} {ins:?} {attrs:?}");
                        assert_eq!(vals[o].data.len(), types[o].numel());
                    }
                }
            }
        }
    }
    assert!(evaluated > 1000, "only {evaluated} random graphs evaluated");
}

#[test]
fn corrupted_text_never_panics() {
    let base = include_str!("../../../examples/graphs/matmul_add.json").as_bytes();
    let mut r = R(SplitMix64::new(7));
    let junk = b"{}[]\",:0123456789-.eE \n\\uabtfn";
    for _ in 0..2000 {
        let mut t = base.to_vec();
        for _ in 0..r.int(1, 4) {
            let i = r.below(t.len() as u64) as usize;
            match r.below(3) {
                0 => t[i] = r.pick(junk),
                1 => {
                    t.remove(i);
                }
                _ => t.insert(i, r.pick(junk)),
            }
        }
        if let Ok(text) = std::str::from_utf8(&t) {
            if let Ok(g) = load_json(text) {
                if let Ok(ins) = graph::random_inputs(&g, 1) {
                    let _ = evaluate(&g, &ins);
                }
            }
        }
    }
}

/// Conv, TopK and Attention need ranks 3 and 4, which the generic test above rarely
/// draws: random small shapes (zero sizes included) and attributes for them.
#[test]
fn random_conv_topk_attention_never_panic() {
    let mut r = R(SplitMix64::new(99));
    let mut evaluated = 0;
    for _ in 0..3000 {
        let dim = |r: &mut R| r.below(5) as usize;
        let fill = |r: &mut R, shape: Vec<usize>| {
            let n: usize = shape.iter().product();
            let data = (0..n).map(|_| r.int(-3, 3) as f32).collect::<Vec<_>>();
            Some((DType::F32, shape, data))
        };
        let (op, ins, attrs, n_out): (&str, Vec<Operand>, Vec<(&str, AttrValue)>, usize) =
            match r.below(3) {
                0 => {
                    let (n, c, l, m, k) = (
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                    );
                    let g = r.int(0, 3).max(1) as usize;
                    let cg = if r.below(4) == 0 { dim(&mut r) } else { c / g };
                    let mut ins = vec![fill(&mut r, vec![n, c, l]), fill(&mut r, vec![m, cg, k])];
                    if r.below(2) == 0 {
                        ins.push(fill(&mut r, vec![m]));
                    }
                    let mut attrs = vec![("group", AttrValue::Int(g as i64))];
                    for name in ["pads", "strides", "dilations"] {
                        if r.below(2) == 0 {
                            attrs.push((name, random_attr(&mut r, name)));
                        }
                    }
                    ("Conv", ins, attrs, 1)
                }
                1 => {
                    let shape: Vec<usize> = (0..r.int(1, 3)).map(|_| dim(&mut r)).collect();
                    let attrs = vec![
                        ("k", AttrValue::Int(r.int(-1, 4))),
                        ("axis", AttrValue::Int(r.int(-3, 3))),
                        ("largest", AttrValue::Int(r.int(0, 1))),
                    ];
                    ("TopK", vec![fill(&mut r, shape)], attrs, 2)
                }
                _ => {
                    let (b, hkv, sq, skv, d) = (
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                        dim(&mut r),
                    );
                    let hq = hkv * r.int(1, 3) as usize + if r.below(5) == 0 { 1 } else { 0 };
                    let dv = dim(&mut r);
                    let ins = vec![
                        fill(&mut r, vec![b, hq, sq, d]),
                        fill(&mut r, vec![b, hkv, skv, d]),
                        fill(&mut r, vec![b, hkv, skv, dv]),
                    ];
                    let attrs = vec![
                        ("is_causal", AttrValue::Int(r.int(0, 1))),
                        ("scale", AttrValue::Float(r.int(-2, 2) as f32 * 0.5)),
                    ];
                    ("Attention", ins, attrs, 1)
                }
            };
        let g = one_node(op, &ins, &attrs, n_out);
        if let Ok(types) = g.infer_types() {
            let vals = evaluate(&g, &BTreeMap::new()).expect("evaluation of a well-typed graph");
            evaluated += 1;
            for o in &g.outputs {
                assert_eq!(vals[o].ty(), types[o], "{op} {ins:?} {attrs:?}");
            }
        }
    }
    assert!(evaluated > 500, "only {evaluated} evaluated");
}

#[test]
fn a_graph_over_the_node_limit_is_refused_before_inference() {
    use graph::{Graph, Node, TensorType, ValueInfo, MAX_GRAPH_NODES};
    let n = MAX_GRAPH_NODES + 1;
    let nodes = (0..n)
        .map(|i| Node {
            name: format!("n{i}"),
            op: "Relu".into(),
            inputs: vec![if i == 0 {
                "x".into()
            } else {
                format!("v{}", i - 1)
            }],
            outputs: vec![format!("v{i}")],
            attrs: BTreeMap::new(),
        })
        .collect();
    let graph = Graph {
        name: "chain".into(),
        description: String::new(),
        inputs: vec![ValueInfo {
            name: "x".into(),
            ty: TensorType::new(DType::F32, vec![1]),
        }],
        outputs: vec![format!("v{}", n - 1)],
        initializers: vec![],
        nodes,
    };
    let err = graph.infer_types().unwrap_err().to_string();
    assert!(err.contains(&format!("{n} nodes")), "{err}");
    assert!(err.contains("limit"), "{err}");
}
