//! Random model graphs for property tests, shared by the compiler's properties and the
//! driver's differential test (which includes this file by path).
//!
//! Proptest draws a [`Recipe`]: input shapes, a dtype, and a list of steps, each a small
//! record of numbers. [`build`] interprets the recipe into a graph, adding one node (or a
//! few) per step. Every step is checked with the graph crate's shape inference and
//! dropped when it does not type-check or grows a tensor past the size bound, so every
//! graph is valid by construction, and shrinking a recipe (fewer steps, smaller numbers)
//! still yields a valid, smaller graph. Most steps add one op; two add the patterns of
//! models: a RoPE rotation (slices of the last dim's halves, a negation, a concat, the
//! multiplies by cos and sin) and a split into attention heads (a reshape into heads of
//! whole sticks, maybe a transpose keeping the last dim, and a reader).
//!
//! The builder keeps every value within a small magnitude (see [`LIMIT`]): logarithms,
//! roots and reciprocals only see values bounded away from zero, divisors are positive,
//! and a step whose result could grow past the limit becomes a bounded one (a `Tanh`, or
//! `Max` for a binary op). The compiler does not care about magnitudes, but the
//! differential test compares f16 results with a reference that rounds once per node
//! where the device rounds once per device op; a one-ulp difference must not be amplified
//! past the tolerance by huge values or cancellation. The bounds are worst cases, save
//! that a normalised value is taken to lie within 3 deviations of its mean.

use compiler::Target;
use graph::{AttrValue, DType, Graph, InitSpec, Initializer, Node, TensorType, ValueInfo};
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::BTreeMap;

/// Largest magnitude (worst case) any generated value may reach.
pub const LIMIT: f32 = 8.0;

/// What graphs to draw.
#[derive(Debug, Clone, Copy)]
pub struct GenConfig {
    /// Dim sizes to draw from, simplest first (shrinking moves toward the front).
    pub dims: &'static [usize],
    pub max_steps: usize,
    /// Largest tensor, in elements.
    pub max_elems: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unary,
    Binary,
    MatMul,
    Reduce,
    Softmax,
    LayerNorm,
    RmsNorm,
    Reshape,
    Transpose,
    Slice,
    Concat,
    Expand,
    Cast,
    /// A RoPE rotation: the two halves of the last dim, one negated, joined the other way
    /// round, then `x * cos + rotated * sin`.
    Rope,
    /// A split of the last dim into heads of whole sticks (a reshape), maybe their
    /// transpose keeping the last dim, then a reader.
    Heads,
}

/// One step of a recipe; `p` are free parameters each kind interprets (0 is the simplest).
#[derive(Debug, Clone)]
pub struct Step {
    pub kind: Kind,
    /// Which existing value is the main operand (0 = the newest).
    pub pick: u8,
    pub p: [u16; 4],
}

#[derive(Debug, Clone)]
pub struct Recipe {
    pub f32: bool,
    pub inputs: Vec<Vec<usize>>,
    pub steps: Vec<Step>,
    /// Also make one consumed intermediate a graph output.
    pub extra_output: Option<u8>,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => Just(Kind::Unary),
        5 => Just(Kind::Binary),
        4 => Just(Kind::MatMul),
        2 => Just(Kind::Reduce),
        2 => Just(Kind::Softmax),
        1 => Just(Kind::LayerNorm),
        1 => Just(Kind::RmsNorm),
        2 => Just(Kind::Reshape),
        2 => Just(Kind::Transpose),
        2 => Just(Kind::Slice),
        2 => Just(Kind::Concat),
        1 => Just(Kind::Expand),
        1 => Just(Kind::Cast),
        3 => Just(Kind::Rope),
        3 => Just(Kind::Heads),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    (kind(), 0u8..4, any::<[u16; 4]>()).prop_map(|(kind, pick, p)| Step { kind, pick, p })
}

pub fn recipe(cfg: GenConfig) -> impl Strategy<Value = Recipe> {
    let shape = prop::collection::vec(select(cfg.dims), 1..=4);
    (
        any::<bool>(),
        prop::collection::vec(shape, 1..=2),
        prop::collection::vec(step(), 1..=cfg.max_steps),
        prop::option::weighted(0.25, any::<u8>()),
    )
        .prop_map(|(f32, inputs, steps, extra_output)| Recipe {
            f32,
            inputs,
            steps,
            extra_output,
        })
}

/// A graph drawn from `cfg`.
pub fn graph(cfg: GenConfig) -> impl Strategy<Value = Graph> {
    recipe(cfg).prop_map(move |r| build(&r, cfg))
}

/// The compiler's view of the `tiny4` machine description.
pub fn tiny4() -> Target {
    Target {
        cores: 4,
        stick_bytes: 128,
        scratchpad_capacity_bytes: 65536,
        span_limit_bytes: 256 * 1024 * 1024,
        matmul_macs_per_ns: 64.0,
        dram_bytes_per_ns: 32.0,
        ring_bytes_per_ns: 32.0,
        pe_rows: 8,
        fill_row_passes: 2,
    }
}

#[derive(Debug, Clone)]
struct Val {
    name: String,
    ty: TensorType,
    /// |x| <= hi.
    hi: f32,
    /// x >= lo.
    lo: f32,
    /// A graph input or node output (not a constant).
    live: bool,
}

struct Builder {
    cfg: GenConfig,
    g: Graph,
    vals: Vec<Val>,
    counter: usize,
}

type Mark = (usize, usize, usize, usize);

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f32) -> f32 {
    (1.0 + x.exp()).ln()
}

fn broadcastable(a: &[usize], b: &[usize]) -> bool {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .all(|(&x, &y)| x == y || x == 1 || y == 1)
}

impl Builder {
    fn mark(&self) -> Mark {
        (
            self.g.inputs.len(),
            self.g.initializers.len(),
            self.g.nodes.len(),
            self.vals.len(),
        )
    }

    fn reset(&mut self, m: Mark) {
        self.g.inputs.truncate(m.0);
        self.g.initializers.truncate(m.1);
        self.g.nodes.truncate(m.2);
        self.vals.truncate(m.3);
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        // Every other name has the shape of the lowering's temporaries (`%v2`), which
        // must not clash with them.
        if self.counter % 2 == 0 {
            format!("{prefix}{}", self.counter)
        } else {
            format!("{prefix}_{}", self.counter)
        }
    }

    fn input(&mut self, dtype: DType, shape: Vec<usize>) -> usize {
        let name = self.fresh("x");
        let ty = TensorType::new(dtype, shape);
        self.g.inputs.push(ValueInfo {
            name: name.clone(),
            ty: ty.clone(),
        });
        // Graph inputs are uniform in [-1, 1) (graph::random_inputs).
        self.vals.push(Val {
            name,
            ty,
            hi: 1.0,
            lo: -1.0,
            live: true,
        });
        self.vals.len() - 1
    }

    fn weight(&mut self, dtype: DType, shape: Vec<usize>, low: f32, high: f32) -> usize {
        let name = self.fresh("w");
        let ty = TensorType::new(dtype, shape);
        self.g.initializers.push(Initializer {
            name: name.clone(),
            ty: ty.clone(),
            init: InitSpec::Uniform {
                seed: self.counter as u64,
                low,
                high,
            },
        });
        self.vals.push(Val {
            name,
            ty,
            hi: low.abs().max(high.abs()),
            lo: low,
            live: false,
        });
        self.vals.len() - 1
    }

    /// Adds a node; `None` (and nothing added) when it does not type-check or is too big.
    fn node(
        &mut self,
        op: &str,
        inputs: &[usize],
        attrs: Vec<(&str, AttrValue)>,
        hi: f32,
        lo: f32,
    ) -> Option<usize> {
        let out = self.fresh("v");
        let name = self.fresh("n");
        self.g.nodes.push(Node {
            name,
            op: op.to_string(),
            inputs: inputs.iter().map(|&i| self.vals[i].name.clone()).collect(),
            outputs: vec![out.clone()],
            attrs: attrs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<BTreeMap<_, _>>(),
        });
        // Inference checks the whole graph, which needs an output; the real ones are
        // chosen at the end.
        self.g.outputs = vec![out.clone()];
        let ty = self
            .g
            .infer_types()
            .ok()
            .and_then(|t| t.get(&out).cloned())
            .filter(|t| t.numel() > 0 && t.numel() <= self.cfg.max_elems && t.shape.len() <= 4);
        let Some(ty) = ty else {
            self.g.nodes.pop();
            return None;
        };
        self.vals.push(Val {
            name: out,
            ty,
            hi,
            lo: lo.max(-hi),
            live: true,
        });
        Some(self.vals.len() - 1)
    }

    fn v(&self, i: usize) -> &Val {
        &self.vals[i]
    }

    fn tanh(&mut self, a: usize) -> Option<usize> {
        let h = self.v(a).hi.min(1.0);
        self.node("Tanh", &[a], vec![], h, -h)
    }

    /// `a` itself when it is at least `min`, else `Sigmoid(a)` (which is positive).
    fn positive(&mut self, a: usize, min: f32) -> Option<usize> {
        if self.v(a).lo >= min {
            return Some(a);
        }
        let h = self.v(a).hi;
        self.node("Sigmoid", &[a], vec![], 1.0, sigmoid(-h))
    }

    fn unary(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        const OPS: &[&str] = &[
            "Relu",
            "Neg",
            "Tanh",
            "Sigmoid",
            "Exp",
            "Gelu",
            "Silu",
            "Softplus",
            "Log",
            "Sqrt",
            "Reciprocal",
        ];
        let op = OPS[p[0] as usize % OPS.len()];
        let h = self.v(a).hi;
        match op {
            "Relu" => self.node(op, &[a], vec![], h, 0.0),
            "Neg" => self.node(op, &[a], vec![], h, -h),
            "Tanh" => self.tanh(a),
            "Sigmoid" => self.node(op, &[a], vec![], 1.0, sigmoid(-h)),
            "Exp" if h.exp() <= LIMIT => self.node(op, &[a], vec![], h.exp(), (-h).exp()),
            "Gelu" => {
                let form = if p[1] % 2 == 0 { "none" } else { "tanh" };
                let attrs = vec![("approximate", AttrValue::String(form.into()))];
                self.node(op, &[a], attrs, h, -0.2)
            }
            "Silu" => self.node(op, &[a], vec![], h, -0.3),
            "Softplus" if h + 0.7 <= LIMIT => self.node(op, &[a], vec![], h + 0.7, softplus(-h)),
            "Sqrt" => {
                let a = self.positive(a, 0.0)?;
                let (h, l) = (self.v(a).hi, self.v(a).lo);
                self.node(op, &[a], vec![], h.sqrt(), l.max(0.0).sqrt())
            }
            "Log" | "Reciprocal" => {
                let a = self.positive(a, 1.0 / LIMIT)?;
                let (h, l) = (self.v(a).hi, self.v(a).lo);
                let m = l.ln().abs().max(h.ln().abs());
                if op == "Log" && m <= LIMIT {
                    self.node(op, &[a], vec![], m, l.ln())
                } else if op == "Reciprocal" && 1.0 / l <= LIMIT {
                    self.node(op, &[a], vec![], 1.0 / l, 1.0 / h)
                } else {
                    self.tanh(a)
                }
            }
            _ => self.tanh(a),
        }
    }

    /// A second operand for `a`: `a` itself, an existing value that broadcasts with it, or
    /// a new input or weight of a shape that broadcasts to `a`'s.
    fn partner(&mut self, a: usize, how: u16, p: u16, q: u16, positive: bool) -> usize {
        let dtype = self.v(a).ty.dtype;
        let shape = self.v(a).ty.shape.clone();
        let ok = |v: &Val| {
            v.ty.dtype == dtype
                && broadcastable(&v.ty.shape, &shape)
                && (!positive || v.lo >= 0.5)
                && v.hi <= LIMIT
        };
        match how % 4 {
            0 if ok(&self.vals[a].clone()) => return a,
            1 => {
                let found: Vec<usize> = (0..self.vals.len())
                    .filter(|&i| i != a && ok(&self.vals[i]))
                    .collect();
                if !found.is_empty() {
                    return found[p as usize % found.len()];
                }
            }
            _ => {}
        }
        // Drop some leading dims and make some of the others 1.
        let drop = p as usize % shape.len();
        let sub: Vec<usize> = shape[drop..]
            .iter()
            .enumerate()
            .map(|(i, &d)| if q >> i & 1 == 1 { 1 } else { d })
            .collect();
        if positive {
            self.weight(dtype, sub, 0.5, 1.5)
        } else if how % 4 == 2 {
            self.input(dtype, sub)
        } else {
            self.weight(dtype, sub, -1.0, 1.0)
        }
    }

    fn binary(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        const OPS: &[&str] = &["Add", "Sub", "Mul", "Div", "Max", "Min"];
        let op = OPS[p[0] as usize % OPS.len()];
        let b = self.partner(a, p[1], p[2], p[3], op == "Div");
        // Either order, except that a divisor must be positive.
        let swap = p[3] & 0x8000 != 0 && (op != "Div" || self.v(a).lo >= 0.5);
        let (x, y) = if swap { (b, a) } else { (a, b) };
        let (hx, hy, ly) = (self.v(x).hi, self.v(y).hi, self.v(y).lo);
        let (op, h) = match op {
            "Add" | "Sub" => (op, hx + hy),
            "Mul" => (op, hx * hy),
            "Div" => (op, hx / ly),
            _ => (op, hx.max(hy)),
        };
        let (op, h) = if h <= LIMIT {
            (op, h)
        } else {
            ("Max", hx.max(hy))
        };
        let lo = match op {
            "Max" => self.v(x).lo.max(ly),
            "Min" => self.v(x).lo.min(ly),
            _ => -h,
        };
        self.node(op, &[x, y], vec![], h, lo)
    }

    fn matmul(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let a = if self.v(a).ty.shape.len() == 1 {
            // A vector becomes one row (K = n) or one column (K = 1).
            let n = self.v(a).ty.shape[0] as i64;
            let shape = if p[3] & 1 == 0 {
                vec![1, n]
            } else {
                vec![n, 1]
            };
            let (h, l) = (self.v(a).hi, self.v(a).lo);
            self.node(
                "Reshape",
                &[a],
                vec![("shape", AttrValue::Ints(shape))],
                h,
                l,
            )?
        } else {
            a
        };
        let va = self.v(a).clone();
        let r = va.ty.shape.len();
        let k = va.ty.shape[r - 1];
        let n = self.cfg.dims[p[0] as usize % self.cfg.dims.len()];
        let batch = &va.ty.shape[..r - 2];
        // B: a weight [K, N]; one with a's batch dims (some broadcast); a graph input;
        // or an existing value of the right shape.
        let b_shape = |full_batch: bool, q: u16| -> Vec<usize> {
            let mut s: Vec<usize> = if full_batch {
                batch
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| if q >> i & 1 == 1 { 1 } else { d })
                    .collect()
            } else {
                vec![]
            };
            s.extend([k, n]);
            s
        };
        // Weights scaled so that a row of products stays within a's bound.
        let s = 1.0 / k as f32;
        let b = match p[1] % 4 {
            1 => self.weight(va.ty.dtype, b_shape(true, p[2]), -s, s),
            2 if va.hi * k as f32 <= LIMIT => self.input(va.ty.dtype, b_shape(p[2] & 1 == 1, 0)),
            3 => {
                let fits = |v: &Val| {
                    let vs = &v.ty.shape;
                    v.ty.dtype == va.ty.dtype
                        && vs.len() >= 2
                        && vs[vs.len() - 2] == k
                        && vs[vs.len() - 1] > 1
                        && broadcastable(&vs[..vs.len() - 2], batch)
                        && va.hi * v.hi * k as f32 <= LIMIT
                };
                let found: Vec<usize> = (0..self.vals.len())
                    .filter(|&i| fits(&self.vals[i]))
                    .collect();
                match found.get(p[2] as usize % found.len().max(1)) {
                    Some(&i) => i,
                    None => self.weight(va.ty.dtype, b_shape(false, 0), -s, s),
                }
            }
            _ => self.weight(va.ty.dtype, b_shape(false, 0), -s, s),
        };
        let h = va.hi * self.v(b).hi * k as f32;
        self.node("MatMul", &[a, b], vec![], h, -h)
    }

    fn reduce(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        const OPS: &[&str] = &["ReduceMean", "ReduceMax", "ReduceSum"];
        let va = self.v(a).clone();
        let r = va.ty.shape.len() as i64;
        let n = va.ty.shape[va.ty.shape.len() - 1] as f32;
        let mut op = OPS[p[0] as usize % OPS.len()];
        if op == "ReduceSum" && va.hi * n > LIMIT {
            op = "ReduceMean";
        }
        let axis = if p[1] % 2 == 0 { -1 } else { r - 1 };
        let mut attrs = vec![("axes", AttrValue::Ints(vec![axis]))];
        if p[2] % 2 == 1 {
            attrs.push(("keepdims", AttrValue::Int(1)));
        }
        let h = if op == "ReduceSum" { va.hi * n } else { va.hi };
        let lo = if op == "ReduceSum" { -h } else { va.lo };
        self.node(op, &[a], attrs, h, lo)
    }

    fn norm(&mut self, a: usize, p: [u16; 4], kind: Kind) -> Option<usize> {
        let va = self.v(a).clone();
        let r = va.ty.shape.len() as i64;
        let n = va.ty.shape[va.ty.shape.len() - 1];
        let axis = if p[1] % 2 == 0 { -1 } else { r - 1 };
        // The device normalises in the tensor's dtype, step by step (centre, square,
        // mean, ...), where the reference works in f32 and rounds once. For an f16 row of
        // nearly equal values (two elements, or a softmax's output) the rounded centred
        // values and their squares are far off in relative terms, and a 1e-5 epsilon lets
        // that through to the result; 0.1 keeps f16 norms well conditioned.
        let eps = if va.ty.dtype == DType::F16 { 0.1 } else { 1e-5 };
        let attrs = vec![
            ("axis", AttrValue::Int(axis)),
            ("epsilon", AttrValue::Float(eps)),
        ];
        // A normalised value is within sqrt(n) deviations of its mean; more than 3 takes
        // an outlier that random data does not make (the one bound that is not a worst
        // case: it keeps norms of long rows in play).
        let z = (n as f32).sqrt().min(3.0);
        match kind {
            Kind::Softmax => {
                if va.hi > LIMIT {
                    return None;
                }
                self.node(
                    "Softmax",
                    &[a],
                    vec![("axis", AttrValue::Int(axis))],
                    1.0,
                    0.0,
                )
            }
            Kind::LayerNorm => {
                let w = if p[2] % 3 == 2 {
                    self.input(va.ty.dtype, vec![n])
                } else {
                    self.weight(va.ty.dtype, vec![n], 0.5, 1.5)
                };
                let mut ins = vec![a, w];
                if p[3] % 2 == 1 {
                    ins.push(self.weight(va.ty.dtype, vec![n], -0.5, 0.5));
                }
                self.node(
                    "LayerNormalization",
                    &ins,
                    attrs,
                    1.5 * z + 0.5,
                    -1.5 * z - 0.5,
                )
            }
            _ => {
                let w = self.weight(va.ty.dtype, vec![n], 0.5, 1.5);
                self.node(
                    "SimplifiedLayerNormalization",
                    &[a, w],
                    attrs,
                    1.5 * z,
                    -1.5 * z,
                )
            }
        }
    }

    fn reshape(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let va = self.v(a).clone();
        let s = &va.ty.shape;
        let r = s.len();
        let (h, l) = (va.hi, va.lo);
        let i = p[1] as usize % r;
        match p[0] % 5 {
            0 if r >= 2 => {
                // Merge two neighbours.
                let i = i.min(r - 2);
                let mut t: Vec<i64> = s.iter().map(|&d| d as i64).collect();
                let m = t[i] * t[i + 1];
                t.splice(i..i + 2, [m]);
                if p[2] % 2 == 1 {
                    let at = p[3] as usize % t.len();
                    t[at] = -1;
                }
                self.node("Reshape", &[a], vec![("shape", AttrValue::Ints(t))], h, l)
            }
            1 if r < 4 => {
                // Split a dim at its smallest factor (a prime dim splits as 1 x d).
                let d = s[i];
                let f = (2..d).find(|f| d % f == 0).unwrap_or(1);
                let mut t: Vec<i64> = s.iter().map(|&d| d as i64).collect();
                t.splice(i..i + 1, [f as i64, (d / f) as i64]);
                self.node("Reshape", &[a], vec![("shape", AttrValue::Ints(t))], h, l)
            }
            2 => {
                let axis = (p[2] as usize % (r + 1)) as i64;
                self.node("Flatten", &[a], vec![("axis", AttrValue::Int(axis))], h, l)
            }
            3 if r < 4 => {
                let axis = (p[2] as usize % (r + 1)) as i64;
                self.node(
                    "Unsqueeze",
                    &[a],
                    vec![("axes", AttrValue::Ints(vec![axis]))],
                    h,
                    l,
                )
            }
            _ => {
                let ones: Vec<i64> = (0..r).filter(|&i| s[i] == 1).map(|i| i as i64).collect();
                if ones.is_empty() || r == 1 {
                    let t = vec![-1];
                    return self.node("Reshape", &[a], vec![("shape", AttrValue::Ints(t))], h, l);
                }
                let axis = ones[p[2] as usize % ones.len()];
                self.node(
                    "Squeeze",
                    &[a],
                    vec![("axes", AttrValue::Ints(vec![axis]))],
                    h,
                    l,
                )
            }
        }
    }

    fn transpose(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let va = self.v(a).clone();
        let r = va.ty.shape.len();
        if r < 2 {
            return self.unary(a, p);
        }
        // Code 0 (the identity) swaps the last two dims instead.
        let mut perm = perm_from_code(r, p[0] as usize);
        if perm.iter().enumerate().all(|(i, &x)| i as i64 == x) {
            perm.swap(r - 2, r - 1);
        }
        let attrs = if p[1] % 8 == 7 {
            // No perm attribute: reverse the dims.
            vec![]
        } else {
            vec![("perm", AttrValue::Ints(perm))]
        };
        self.node("Transpose", &[a], attrs, va.hi, va.lo)
    }

    fn slice(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let va = self.v(a).clone();
        let r = va.ty.shape.len();
        let axis = p[0] as usize % r;
        let d = va.ty.shape[axis] as i64;
        let start = p[1] as i64 % d;
        let end = start + 1 + p[2] as i64 % (d - start);
        let (start, end, step) = match p[3] % 6 {
            4 => (start, end, 2),
            5 => (end - 1, start - 1 - d, -1), // reversed; an end below -d means "past the front"
            _ => (start, end, 1),
        };
        let ax = if p[3] & 0x100 != 0 {
            axis as i64 - r as i64
        } else {
            axis as i64
        };
        let mut attrs = vec![
            ("starts", AttrValue::Ints(vec![start])),
            ("ends", AttrValue::Ints(vec![end])),
            ("axes", AttrValue::Ints(vec![ax])),
        ];
        if step != 1 || p[3] & 0x200 != 0 {
            attrs.push(("steps", AttrValue::Ints(vec![step])));
        }
        self.node("Slice", &[a], attrs, va.hi, va.lo)
    }

    fn concat(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let va = self.v(a).clone();
        let r = va.ty.shape.len();
        let axis = p[0] as usize % r;
        let mut ins = vec![a];
        match p[1] % 4 {
            0 => ins.push(a),
            1 => {
                let found: Vec<usize> = (0..self.vals.len())
                    .filter(|&i| {
                        let v = &self.vals[i];
                        i != a
                            && v.ty.dtype == va.ty.dtype
                            && v.hi <= LIMIT
                            && v.ty.shape.len() == r
                            && (0..r).all(|k| k == axis || v.ty.shape[k] == va.ty.shape[k])
                    })
                    .collect();
                match found.get(p[2] as usize % found.len().max(1)) {
                    Some(&i) => ins.push(i),
                    None => ins.push(a),
                }
            }
            _ => {
                let mut s = va.ty.shape.clone();
                s[axis] = self.cfg.dims[p[2] as usize % self.cfg.dims.len()];
                let b = if p[1] % 4 == 2 {
                    self.input(va.ty.dtype, s)
                } else {
                    self.weight(va.ty.dtype, s, -1.0, 1.0)
                };
                ins.push(b);
                if p[3] % 2 == 1 {
                    ins.push(a);
                }
            }
        }
        let h = ins.iter().map(|&i| self.v(i).hi).fold(0.0, f32::max);
        let lo = ins.iter().map(|&i| self.v(i).lo).fold(h, f32::min);
        let ax = if p[3] & 0x100 != 0 {
            axis as i64 - r as i64
        } else {
            axis as i64
        };
        self.node("Concat", &ins, vec![("axis", AttrValue::Int(ax))], h, lo)
    }

    fn expand(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let va = self.v(a).clone();
        let mut t: Vec<i64> = va
            .ty
            .shape
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                if d == 1 && p[1] >> i & 1 == 1 {
                    self.cfg.dims[(p[2] as usize + i) % self.cfg.dims.len()] as i64
                } else {
                    d as i64
                }
            })
            .collect();
        if t.len() < 4
            && (p[3] % 2 == 1 || t.iter().zip(&va.ty.shape).all(|(&x, &y)| x as usize == y))
        {
            t.insert(0, 1 + (p[0] % 3) as i64);
        }
        self.node(
            "Expand",
            &[a],
            vec![("shape", AttrValue::Ints(t))],
            va.hi,
            va.lo,
        )
    }

    fn cast(&mut self, a: usize) -> Option<usize> {
        let va = self.v(a).clone();
        let to = if va.ty.dtype == DType::F16 {
            "f32"
        } else {
            "f16"
        };
        self.node(
            "Cast",
            &[a],
            vec![("to", AttrValue::String(to.into()))],
            va.hi,
            va.lo,
        )
    }

    /// Elements of one stick of `a`'s dtype (128-byte sticks, as every target has).
    fn stick(&self, a: usize) -> usize {
        128 / self.v(a).ty.dtype.size_bytes()
    }

    /// `a` times a weight `[K, n]` (a vector first made one row): `a` with last dim `n`,
    /// within `a`'s bound.
    fn project(&mut self, a: usize, n: usize) -> Option<usize> {
        let a = if self.v(a).ty.shape.len() == 1 {
            let k = self.v(a).ty.shape[0] as i64;
            let (h, l) = (self.v(a).hi, self.v(a).lo);
            let shape = AttrValue::Ints(vec![1, k]);
            self.node("Reshape", &[a], vec![("shape", shape)], h, l)?
        } else {
            a
        };
        let va = self.v(a).clone();
        let k = va.ty.shape[va.ty.shape.len() - 1];
        let s = 1.0 / k as f32;
        let w = self.weight(va.ty.dtype, vec![k, n], -s, s);
        self.node("MatMul", &[a, w], vec![], va.hi, -va.hi)
    }

    /// `a` projected to last dim `n` where that fits the size bound, else a new graph input
    /// `[rows, n]` that does (rows drawn by `pick`).
    fn widen(&mut self, a: usize, n: usize, pick: u16) -> Option<usize> {
        let shape = &self.v(a).ty.shape;
        let d = shape[shape.len() - 1];
        let rows = shape.iter().product::<usize>() / d;
        if rows * n <= self.cfg.max_elems {
            return if n == d { Some(a) } else { self.project(a, n) };
        }
        let fits: Vec<usize> = self
            .cfg
            .dims
            .iter()
            .copied()
            .filter(|&r| r * n <= self.cfg.max_elems)
            .collect();
        let r = *fits.get(pick as usize % fits.len().max(1))?;
        let dtype = self.v(a).ty.dtype;
        Some(self.input(dtype, vec![r, n]))
    }

    /// RoPE over the last dim of `a` (or of a projection of it to an even width: halves of
    /// whole sticks or of any size): `x1, x2` its halves, `y = x * cos + concat(-x2, x1) *
    /// sin`, with `cos` and `sin` over the trailing dims (graph inputs or weights).
    fn rope(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let eps = self.stick(a);
        let shape = self.v(a).ty.shape.clone();
        let d = shape[shape.len() - 1];
        let h = match p[0] % 4 {
            0 if d % 2 == 0 => d,
            // Halves of one or two whole sticks.
            1 | 2 => 2 * eps * (1 + p[1] as usize % 2),
            _ => 2 * self.cfg.dims[p[1] as usize % self.cfg.dims.len()],
        };
        let mut x = self.widen(a, h, p[1] >> 4)?;
        // The result is within twice x's bound.
        if 2.0 * self.v(x).hi > LIMIT {
            x = self.tanh(x)?;
        }
        let (hi, lo) = (self.v(x).hi, self.v(x).lo);
        let r = self.v(x).ty.shape.len();
        let half = (h / 2) as i64;
        let ax = if p[2] & 1 == 0 { -1 } else { r as i64 - 1 };
        let slice = |start: i64, end: i64| {
            vec![
                ("starts", AttrValue::Ints(vec![start])),
                ("ends", AttrValue::Ints(vec![end])),
                ("axes", AttrValue::Ints(vec![ax])),
            ]
        };
        let x1 = self.node("Slice", &[x], slice(0, half), hi, lo)?;
        // The second half as exporters write it: from the middle to the end, from `-half`,
        // or to "the end" as i64::MAX.
        let (s2, e2) = match p[2] >> 1 & 3 {
            1 => (-half, h as i64),
            2 => (half, i64::MAX),
            _ => (half, h as i64),
        };
        let x2 = self.node("Slice", &[x], slice(s2, e2), hi, lo)?;
        let x2 = if p[2] & 0x18 == 0x18 {
            // Now and then a plain swap of the halves.
            x2
        } else {
            self.node("Neg", &[x2], vec![], hi, -hi)?
        };
        let rot = self.node(
            "Concat",
            &[x2, x1],
            vec![("axis", AttrValue::Int(ax))],
            hi,
            -hi,
        )?;
        // cos and sin: x's trailing dims (the leading ones broadcast).
        let xs = self.v(x).ty.shape.clone();
        let drop = p[3] as usize % xs.len();
        let sub = xs[drop..].to_vec();
        let dtype = self.v(x).ty.dtype;
        let (cos, sin) = if p[3] & 0x100 != 0 {
            (self.input(dtype, sub.clone()), self.input(dtype, sub))
        } else {
            (
                self.weight(dtype, sub.clone(), -1.0, 1.0),
                self.weight(dtype, sub, -1.0, 1.0),
            )
        };
        let xc = if p[3] & 0x200 != 0 {
            self.node("Mul", &[cos, x], vec![], hi, -hi)?
        } else {
            self.node("Mul", &[x, cos], vec![], hi, -hi)?
        };
        let rs = self.node("Mul", &[rot, sin], vec![], hi, -hi)?;
        self.node("Add", &[xc, rs], vec![], 2.0 * hi, -2.0 * hi)
    }

    /// Attention's heads: the last dim of `a` (or of a projection of it) split into `g`
    /// heads of whole sticks by a reshape, maybe transposed keeping the last dim (heads
    /// before rows), then read by a RoPE, a matmul, a unary op, or the inverse transpose
    /// and a merge of the heads (so the reshape and transpose are intermediates, which may
    /// share their input's buffer).
    fn heads(&mut self, a: usize, p: [u16; 4]) -> Option<usize> {
        let eps = self.stick(a);
        let shape = self.v(a).ty.shape.clone();
        let d = shape[shape.len() - 1];
        let rows = shape.iter().product::<usize>() / d;
        let (mut g, mut hw) = if d % eps == 0 && d / eps >= 2 && p[0] % 4 != 0 {
            // Heads of f whole sticks, f a proper divisor of a's sticks.
            let k = d / eps;
            let fs: Vec<usize> = (1..k).filter(|f| k % f == 0).collect();
            let f = fs[p[1] as usize % fs.len()];
            (k / f, eps * f)
        } else {
            (2 + p[2] as usize % 3, eps * (1 + p[1] as usize % 2))
        };
        while rows * g * hw > self.cfg.max_elems && (g > 2 || hw > eps) {
            if hw > eps {
                hw = eps;
            } else {
                g = 2;
            }
        }
        let x = self.widen(a, g * hw, p[0] >> 4)?;
        let vx = self.v(x).clone();
        let (hi, lo) = (vx.hi, vx.lo);
        let xs = vx.ty.shape.clone();
        let mut t: Vec<i64> = xs[..xs.len() - 1].iter().map(|&d| d as i64).collect();
        if t.len() >= 3 {
            let m = t[0] * t[1];
            t.splice(0..2, [m]);
        }
        t.extend([g as i64, hw as i64]);
        if p[3] & 1 == 1 && t.len() > 2 {
            t[0] = -1;
        }
        let mut y = self.node("Reshape", &[x], vec![("shape", AttrValue::Ints(t))], hi, lo)?;
        // A permutation of the dims before the last (not the identity).
        let ry = self.v(y).ty.shape.len();
        let mut perm: Vec<i64> = (0..ry as i64).collect();
        let transposed = p[3] & 2 != 0 && ry >= 3;
        if transposed {
            perm = perm_from_code(ry - 1, (p[2] >> 4) as usize);
            if perm.iter().enumerate().all(|(i, &x)| i as i64 == x) {
                perm.swap(ry - 3, ry - 2);
            }
            perm.push(ry as i64 - 1);
            let attrs = vec![("perm", AttrValue::Ints(perm.clone()))];
            y = self.node("Transpose", &[y], attrs, hi, lo)?;
        }
        match p[3] >> 2 & 3 {
            0 => self.rope(y, [0, p[1], p[2] >> 8, p[0]]),
            1 => self.matmul(y, [p[0], p[1] % 2, p[2], p[3]]),
            2 => {
                // Back to x's shape: the inverse transpose, and a merge of the heads.
                if transposed {
                    let mut inv = vec![0i64; ry];
                    for (i, &q) in perm.iter().enumerate() {
                        inv[q as usize] = i as i64;
                    }
                    let attrs = vec![("perm", AttrValue::Ints(inv))];
                    y = self.node("Transpose", &[y], attrs, hi, lo)?;
                }
                let back: Vec<i64> = xs.iter().map(|&d| d as i64).collect();
                let z = self.node(
                    "Reshape",
                    &[y],
                    vec![("shape", AttrValue::Ints(back))],
                    hi,
                    lo,
                )?;
                self.unary(z, p)
            }
            _ => self.unary(y, p),
        }
    }

    fn step(&mut self, s: &Step) -> Option<usize> {
        let live: Vec<usize> = (0..self.vals.len())
            .filter(|&i| self.vals[i].live)
            .collect();
        if live.is_empty() {
            return None;
        }
        let a = live[live.len() - 1 - s.pick as usize % live.len()];
        match s.kind {
            Kind::Unary => self.unary(a, s.p),
            Kind::Binary => self.binary(a, s.p),
            Kind::MatMul => self.matmul(a, s.p),
            Kind::Reduce => self.reduce(a, s.p),
            Kind::Softmax | Kind::LayerNorm | Kind::RmsNorm => self.norm(a, s.p, s.kind),
            Kind::Reshape => self.reshape(a, s.p),
            Kind::Transpose => self.transpose(a, s.p),
            Kind::Slice => self.slice(a, s.p),
            Kind::Concat => self.concat(a, s.p),
            Kind::Expand => self.expand(a, s.p),
            Kind::Cast => self.cast(a),
            Kind::Rope => self.rope(a, s.p),
            Kind::Heads => self.heads(a, s.p),
        }
    }
}

/// Shrinks a shape until it has at most `max` elements (halving the largest dim).
fn fit(shape: &[usize], max: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    while s.iter().product::<usize>() > max {
        let i = (0..s.len()).max_by_key(|&i| s[i]).unwrap_or(0);
        s[i] = s[i].div_ceil(2);
    }
    s
}

/// The graph a recipe describes (see the module doc).
pub fn build(r: &Recipe, cfg: GenConfig) -> Graph {
    let dtype = if r.f32 { DType::F32 } else { DType::F16 };
    let mut b = Builder {
        cfg,
        g: Graph {
            name: "random".into(),
            description: "a generated property-test graph".into(),
            inputs: vec![],
            outputs: vec![],
            initializers: vec![],
            nodes: vec![],
        },
        vals: vec![],
        counter: 0,
    };
    for s in &r.inputs {
        b.input(dtype, fit(s, cfg.max_elems));
    }
    for s in &r.steps {
        let m = b.mark();
        if b.step(s).is_none() {
            b.reset(m);
        }
    }
    if b.g.nodes.is_empty() {
        let last = b.vals.len() - 1;
        b.node("Relu", &[last], vec![], 1.0, 0.0)
            .expect("Relu of an input type-checks");
    }
    // Every node output nothing reads is an output, so no node is dead.
    let read: Vec<&String> = b.g.nodes.iter().flat_map(|n| &n.inputs).collect();
    let produced: Vec<String> = b.g.nodes.iter().map(|n| n.outputs[0].clone()).collect();
    let mut outputs: Vec<String> = produced
        .iter()
        .filter(|o| !read.contains(o))
        .cloned()
        .collect();
    if let Some(k) = r.extra_output {
        let inner: Vec<&String> = produced.iter().filter(|o| read.contains(o)).collect();
        if !inner.is_empty() {
            outputs.push(inner[k as usize % inner.len()].clone());
        }
    }
    b.g.outputs = outputs;
    b.g
}

/// An error message without the names and numbers in it, to count errors by kind.
pub fn short(msg: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for ch in msg.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                if quoted {
                    out.push('_');
                }
            }
            _ if quoted => {}
            '0'..='9' if out.ends_with('N') => {}
            '0'..='9' => out.push('N'),
            _ => out.push(ch),
        }
    }
    out
}

/// The permutation of `0..n` that mixed-radix `code` names (each digit picks one of the
/// dims left), so every code gives a valid permutation and shrinking it stays valid.
fn perm_from_code(n: usize, mut code: usize) -> Vec<i64> {
    let mut rest: Vec<i64> = (0..n as i64).collect();
    let mut perm = Vec::with_capacity(n);
    while !rest.is_empty() {
        let k = code % rest.len();
        code /= rest.len();
        perm.push(rest.remove(k));
    }
    perm
}
