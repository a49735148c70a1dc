//! What a KTIR module needs before it can run on its own: the DRAM buffers its views
//! address (over `index` arguments, at offsets from them, or at constant addresses), the
//! scratchpad regions it reads, and its scalar and tensor arguments, each with its element
//! type, shape, address and role. Built from the program text and the values the user gave,
//! before anything is allocated; `spyre ktir inputs` prints it and the runner places from it.

use crate::{BufferSpec, DriverError, Stage};
use ktir::ast::{Block, Module, OpKind, RuntimeArgField, ScalarType, SizeOperand, Type};
use ktir::MemorySpace;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Whether the kernels read a buffer, write it, or both (from the loads and stores through
/// its views).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Role {
    /// Only loaded from: an input.
    In,
    /// Only stored to: an output.
    Out,
    /// Loaded and stored.
    InOut,
    /// Neither (a view no load or store uses).
    #[default]
    Unused,
}

impl Role {
    fn with(self, other: Role) -> Role {
        match (self, other) {
            (Role::Unused, r) | (r, Role::Unused) => r,
            (a, b) if a == b => a,
            _ => Role::InOut,
        }
    }

    /// The role's name (`in`, `out`, `inout`, `unused`).
    pub fn name(self) -> &'static str {
        match self {
            Role::In => "in",
            Role::Out => "out",
            Role::InOut => "inout",
            Role::Unused => "unused",
        }
    }
}

/// A scratchpad (`ct_local`) view whose initial contents a `.npy` file may give: named
/// after the view (its SSA name without `%`), filled point by point in row-major order
/// on every core whose scratchpad it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ScratchpadSpec {
    /// The view's name (without `%`).
    pub name: String,
    /// The function that builds it.
    pub function: String,
    /// Element type.
    pub elem: String,
    /// The view's sizes.
    pub shape: Vec<usize>,
    /// Its base, in elements of the scratchpad.
    #[cfg_attr(test, ts(type = "number"))]
    pub address: i64,
    /// Its strides.
    #[cfg_attr(test, ts(type = "Array<number>"))]
    pub strides: Vec<i64>,
    /// The cores whose scratchpad it is (`ct_id`, or every core of the grid).
    pub cores: Vec<usize>,
    /// Loaded from, stored to, or both.
    pub role: Role,
}

/// A scalar argument, typed by the function signature.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ScalarSpec {
    /// The argument name (without `%`).
    pub name: String,
    /// Its type as written (`index`, `f32`, `!ktdp.runtime_arg<index, ...>` as `index`).
    pub dtype: String,
    /// The functions taking it.
    pub functions: Vec<String>,
    /// The value it will get, when given.
    pub value: Option<String>,
}

/// A tensor argument (filled from `NAME.npy` or seeded random values).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TensorArgSpec {
    /// The argument name.
    pub name: String,
    /// Element type.
    pub elem: String,
    /// Shape (from the type).
    pub shape: Vec<usize>,
}

/// Everything a run of a KTIR module takes: `spyre ktir inputs` and the page's Run panel
/// list it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KtirInputs {
    /// DRAM buffers: over arguments (address chosen at run time, or given with
    /// `--place`) and at constant addresses.
    pub buffers: Vec<BufferSpec>,
    /// Scratchpad views whose initial contents may be given.
    pub scratchpads: Vec<ScratchpadSpec>,
    /// Scalar arguments.
    pub scalars: Vec<ScalarSpec>,
    /// Tensor arguments.
    pub tensors: Vec<TensorArgSpec>,
    /// What is missing before the module can run (scalars without a value, sizes that
    /// depend on them), one line each.
    pub missing: Vec<String>,
}

/// A scalar value given by the user, converted for the argument's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ScalarValue {
    Int(i64),
    Float(f64),
}

/// Parses `text` as a value of `ty`: integers and `index` must be integers within the
/// type's range, floats finite and within the type's range.
pub(crate) fn parse_scalar(text: &str, ty: ScalarType) -> Result<ScalarValue, String> {
    let t = text.trim();
    if ty.is_float() {
        let x: f64 = t
            .parse()
            .map_err(|_| format!("'{t}' is not a number (the argument is {})", ty.name()))?;
        let max = match ty {
            ScalarType::F16 => 65504.0,
            ScalarType::BF16 => 3.389_531_389_251_535e38,
            ScalarType::F32 => f32::MAX as f64,
            ScalarType::F8E4M3 => 448.0,
            ScalarType::F8E5M2 => 57344.0,
            _ => f64::MAX,
        };
        if !x.is_finite() || x.abs() > max {
            return Err(format!(
                "{t} does not fit {} (largest magnitude {max:e})",
                ty.name()
            ));
        }
        // Rounded as the argument's type holds it.
        let held = match ty {
            ScalarType::F16 => half::f16::from_f64(x).to_f64(),
            ScalarType::BF16 => half::bf16::from_f64(x).to_f64(),
            ScalarType::F32 => x as f32 as f64,
            _ => x,
        };
        return Ok(ScalarValue::Float(held));
    }
    let v: i64 = t.parse().map_err(|_| {
        format!(
            "'{t}' is not an integer (the argument is {}){}",
            ty.name(),
            if t.parse::<f64>().is_ok() {
                "; only float arguments take fractions"
            } else {
                ""
            }
        )
    })?;
    let (lo, hi): (i64, i64) = match ty {
        ScalarType::I1 => (0, 1),
        ScalarType::I8 => (i8::MIN.into(), i8::MAX.into()),
        ScalarType::I16 => (i16::MIN.into(), i16::MAX.into()),
        ScalarType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    };
    if v < lo || v > hi {
        return Err(format!("{v} does not fit {} ({lo} to {hi})", ty.name()));
    }
    Ok(ScalarValue::Int(v))
}

/// The scalar type of an argument type: scalars, and runtime arguments by their
/// underlying type.
pub(crate) fn scalar_type(t: &Type) -> Option<ScalarType> {
    match t {
        Type::Scalar(s) => Some(*s),
        Type::RuntimeArg { underlying, .. } => scalar_type(underlying),
        _ => None,
    }
}

/// What the analysis knows about an `index` value before the run.
#[derive(Clone, Debug)]
enum Val {
    /// A number (constants, given scalars and arithmetic of them); `origin` is the
    /// constant it starts from, naming a buffer at that address.
    Known { v: i64, origin: String },
    /// An argument buffer's address plus a known offset.
    Addr { buffer: String, offset: i64 },
    /// An argument buffer's address plus an offset only known at run time, within
    /// `offsets` (inclusive) where that is known (a tile id or a loop variable times a
    /// stride).
    AddrAtRunTime {
        buffer: String,
        offsets: Option<(i64, i64)>,
    },
    /// A number known only at run time but known to lie in `[lo, hi]`: a tile id, a loop
    /// variable, or arithmetic of them and constants.
    Range { lo: i64, hi: i64 },
    /// Known only at run time; depends on these scalar arguments not given.
    Unknown { missing: BTreeSet<String> },
}

/// A view over DRAM found by the analysis.
struct DramView {
    func: String,
    view: String,
    /// `Some` for a view at a known address.
    at: Option<Place>,
    /// The argument buffer whose address it starts from (also for run-time offsets).
    buffer: Option<String>,
    elem: ScalarType,
    /// Sizes and strides when known.
    dims: Option<(Vec<i64>, Vec<i64>)>,
}

#[derive(Clone, Debug)]
enum Place {
    /// Argument buffer plus offset.
    Arg(String, i64),
    /// Argument buffer plus an offset known at run time, at most this one.
    ArgUpTo(String, i64),
    /// A constant address; the origin names it.
    Fixed(i64, String),
}

/// The inputs a module needs, given the scalar values and placements the user gave.
pub(crate) struct Plan {
    pub inputs: KtirInputs,
    /// Argument buffers by name.
    pub arg_buffers: BTreeSet<String>,
    /// Scalar values by argument name.
    pub scalars: BTreeMap<String, ScalarValue>,
    /// Every name a `--arg` may give (function arguments and sizes' SSA names).
    pub arg_names: Vec<String>,
}

/// Builds the plan: `ints` are integer values by name (arguments or size SSA names),
/// `texts` values as text to be typed by the signature, `places` fixed addresses.
pub(crate) fn plan(
    module: &Module,
    ints: &BTreeMap<String, i64>,
    texts: &BTreeMap<String, String>,
    places: &BTreeMap<String, i64>,
) -> Result<Plan, DriverError> {
    let err = |m: String| DriverError::new(Stage::Ktir, m);
    // Scalars first: their types come from the signatures.
    let mut scalars: BTreeMap<String, ScalarValue> = BTreeMap::new();
    for (name, text) in texts {
        let ty = module
            .funcs
            .iter()
            .flat_map(|f| f.args.iter())
            .find(|(n, _)| n == name)
            .and_then(|(_, t)| scalar_type(t))
            .unwrap_or(ScalarType::Index);
        let v = parse_scalar(text, ty).map_err(|e| err(format!("--arg {name}={text}: {e}")))?;
        scalars.insert(name.clone(), v);
    }
    for (name, v) in ints {
        scalars.entry(name.clone()).or_insert(ScalarValue::Int(*v));
    }
    let int_of = |name: &str| match scalars.get(name) {
        Some(ScalarValue::Int(v)) => Some(*v),
        _ => None,
    };

    let mut views: Vec<DramView> = Vec::new();
    let mut scratch: Vec<ScratchpadSpec> = Vec::new();
    let mut roles: BTreeMap<String, Role> = BTreeMap::new();
    let mut missing: Vec<String> = Vec::new();
    let mut arg_names: Vec<String> = Vec::new();
    // Arguments used as the base of a DRAM view (directly or at an offset).
    let mut arg_buffers: BTreeSet<String> = BTreeSet::new();

    for f in &module.funcs {
        let mut env: BTreeMap<String, Val> = BTreeMap::new();
        for (name, ty) in &f.args {
            arg_names.push(name.clone());
            let v = match (int_of(name), ty) {
                (Some(v), _) => Val::Known {
                    v,
                    origin: name.clone(),
                },
                (None, Type::Scalar(ScalarType::Index)) => Val::Addr {
                    buffer: name.clone(),
                    offset: 0,
                },
                (None, t) if scalar_type(t).is_some() => Val::Unknown {
                    missing: if scalars.contains_key(name) {
                        BTreeSet::new()
                    } else {
                        BTreeSet::from([name.clone()])
                    },
                },
                _ => Val::Unknown {
                    missing: BTreeSet::new(),
                },
            };
            env.insert(name.clone(), v);
        }
        // Which buffers (argument names, fixed-view keys, scratchpad names) each view
        // and tile value reaches.
        let mut reach: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let grid = f.grid.clone().unwrap_or_else(|| vec![1]);
        walk(&f.body, &grid, &mut env, &mut |op, env| {
            let result = op.results.first().cloned().unwrap_or_default();
            match &op.kind {
                OpKind::ConstructMemoryView {
                    base,
                    sizes,
                    strides,
                    memory_space,
                    ..
                } => {
                    // A size the user names by the SSA value wins (kept for programs run
                    // before sizes were traced to arguments).
                    let static_dims: Vec<Option<usize>> = op
                        .result_types
                        .first()
                        .map(|t| {
                            t.shape()
                                .iter()
                                .map(|d| match d {
                                    ktir::ast::Dim::Static(n) => Some(*n),
                                    ktir::ast::Dim::Dynamic => None,
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let mut unknown: BTreeSet<String> = BTreeSet::new();
                    let mut value = |s: &SizeOperand, static_dim: Option<usize>| match s {
                        SizeOperand::Static(v) => Some(*v),
                        SizeOperand::Dynamic(v) => {
                            if let Some(x) = int_of(&v.name) {
                                return Some(x);
                            }
                            match env.get(&v.name) {
                                Some(Val::Known { v, .. }) => Some(*v),
                                Some(Val::Unknown { missing }) if !missing.is_empty() => {
                                    unknown.extend(missing.iter().cloned());
                                    None
                                }
                                // An index argument used as a size is a scalar.
                                Some(Val::Addr { buffer, offset: 0 }) => {
                                    unknown.insert(buffer.clone());
                                    None
                                }
                                // Known only at run time: a static dimension of the
                                // memref type bounds it (checked at run time); without
                                // one the view does not size its buffer.
                                _ => static_dim.and_then(|n| i64::try_from(n).ok()),
                            }
                        }
                    };
                    let size_values: Vec<Option<i64>> = sizes
                        .iter()
                        .enumerate()
                        .map(|(i, s)| value(s, static_dims.get(i).copied().flatten()))
                        .collect();
                    let stride_values: Vec<Option<i64>> =
                        strides.iter().map(|s| value(s, None)).collect();
                    let dims = size_values
                        .into_iter()
                        .collect::<Option<Vec<i64>>>()
                        .zip(stride_values.into_iter().collect::<Option<Vec<i64>>>());
                    for name in &unknown {
                        let line = format!(
                            "--arg {name}=VALUE ({}; the sizes or strides of view '%{result}' in @{} depend on it)",
                            arg_type(module, name),
                            f.name
                        );
                        // One line per missing name, at its first use.
                        let key = format!("--arg {name}=");
                        if !missing.iter().any(|m| m.starts_with(&key)) {
                            missing.push(line);
                        }
                    }
                    let elem = op
                        .result_types
                        .first()
                        .and_then(Type::elem)
                        .unwrap_or(ScalarType::F32);
                    let base_val = env.get(&base.name).cloned();
                    match memory_space {
                        Some(MemorySpace::Local { core }) => {
                            let (Some(Val::Known { v: address, .. }), Some((sz, st))) =
                                (base_val, dims)
                            else {
                                return;
                            };
                            let cores = match core {
                                Some(c) => vec![usize::try_from(*c).unwrap_or(usize::MAX)],
                                None => (0..f.grid_size()).collect(),
                            };
                            if !scratch.iter().any(|s| s.name == result) {
                                scratch.push(ScratchpadSpec {
                                    name: result.clone(),
                                    function: f.name.clone(),
                                    elem: elem.name().to_string(),
                                    shape: sz.iter().map(|&n| n.max(0) as usize).collect(),
                                    address,
                                    strides: st,
                                    cores,
                                    role: Role::Unused,
                                });
                            }
                            reach.insert(result.clone(), vec![format!("lx:{result}")]);
                        }
                        _ => {
                            let (at, buffer) = match base_val {
                                Some(Val::Known { v, origin }) => {
                                    (Some(Place::Fixed(v, origin)), None)
                                }
                                Some(Val::Addr { buffer, offset }) => {
                                    (Some(Place::Arg(buffer.clone(), offset)), Some(buffer))
                                }
                                Some(Val::AddrAtRunTime { buffer, offsets }) => (
                                    offsets.map(|(_, hi)| Place::ArgUpTo(buffer.clone(), hi)),
                                    Some(buffer),
                                ),
                                _ => (None, None),
                            };
                            if let Some(b) = &buffer {
                                arg_buffers.insert(b.clone());
                            }
                            let key = match (&at, &buffer) {
                                (_, Some(b)) => b.clone(),
                                (Some(Place::Fixed(..)), None) => {
                                    format!("view:{}:{result}", f.name)
                                }
                                _ => String::new(),
                            };
                            if !key.is_empty() {
                                reach.insert(result.clone(), vec![key]);
                            }
                            views.push(DramView {
                                func: f.name.clone(),
                                view: result.clone(),
                                at,
                                buffer,
                                elem,
                                dims,
                            });
                        }
                    }
                }
                OpKind::ConstructDistributedMemoryView { views: parts, .. } => {
                    let all: Vec<String> = parts
                        .iter()
                        .flat_map(|p| reach.get(&p.name).cloned().unwrap_or_default())
                        .collect();
                    reach.insert(result, all);
                }
                OpKind::ConstructAccessTile { view, .. } => {
                    if let Some(r) = reach.get(&view.name).cloned() {
                        reach.insert(result, r);
                    }
                }
                OpKind::ConstructIndirectAccessTile { base, .. } => {
                    if let Some(r) = reach.get(&base.name).cloned() {
                        reach.insert(result, r);
                    }
                    // The index views are read.
                    for v in op.kind.operands() {
                        if v.name != base.name {
                            for b in reach.get(&v.name).cloned().unwrap_or_default() {
                                let e = roles.entry(b).or_default();
                                *e = e.with(Role::In);
                            }
                        }
                    }
                }
                OpKind::Load { tile, .. } => {
                    for b in reach.get(&tile.name).cloned().unwrap_or_default() {
                        let e = roles.entry(b).or_default();
                        *e = e.with(Role::In);
                    }
                }
                OpKind::Store { tile, .. } => {
                    for b in reach.get(&tile.name).cloned().unwrap_or_default() {
                        let e = roles.entry(b).or_default();
                        *e = e.with(Role::Out);
                    }
                }
                _ => {}
            }
        });
    }

    // Argument buffers: every view at a known offset sizes them.
    let mut buffers: BTreeMap<String, BufferSpec> = BTreeMap::new();
    for v in &views {
        // A view at offsets known only as a range sizes the buffer for its furthest one.
        let (buffer, offset, exact) = match &v.at {
            Some(Place::Arg(buffer, offset)) => (buffer, offset, true),
            Some(Place::ArgUpTo(buffer, hi)) => (buffer, hi, false),
            _ => continue,
        };
        let Some((sizes, strides)) = &v.dims else {
            continue;
        };
        let (elements, shape) = reach_of(v, sizes, strides, *offset)?;
        let entry = buffers.entry(buffer.clone()).or_insert_with(|| BufferSpec {
            name: buffer.clone(),
            elem: v.elem.name().to_string(),
            elements: 0,
            shape: Vec::new(),
            address: places.get(buffer).copied(),
            role: roles.get(buffer).copied().unwrap_or_default(),
        });
        check_elem(entry, v)?;
        if elements >= entry.elements {
            // The shape written to .npy files is that of the view reaching furthest
            // from the buffer's start; a buffer that views at run-time offsets reach
            // furthest into is flat.
            if !exact {
                if elements > entry.elements {
                    entry.shape = vec![elements];
                }
            } else if *offset == 0 || entry.elements == 0 {
                entry.shape = shape;
            }
            entry.elements = elements;
        }
    }
    // Buffers viewed only at offsets known at run time still take an address.
    for v in &views {
        if let Some(b) = &v.buffer {
            buffers.entry(b.clone()).or_insert_with(|| BufferSpec {
                name: b.clone(),
                elem: v.elem.name().to_string(),
                elements: 0,
                shape: Vec::new(),
                address: places.get(b).copied(),
                role: roles.get(b).copied().unwrap_or_default(),
            });
        }
    }

    // Views at constant addresses: a `--place NAME=ADDR` takes every view from ADDR up to
    // the next placement; the others group into buffers of overlapping views, named after
    // the constant the lowest one's address comes from.
    let mut fixed: Vec<(i64, i64, &DramView, Vec<usize>, String)> = Vec::new();
    for v in &views {
        let (Some(Place::Fixed(addr, origin)), Some((sizes, strides))) = (&v.at, &v.dims) else {
            continue;
        };
        let (elements, shape) = reach_of(v, sizes, strides, 0)?;
        let end = addr.checked_add(elements as i64).ok_or_else(|| {
            err(format!(
                "@{}: view '%{}' at address {addr} reaches beyond the largest address",
                v.func, v.view
            ))
        })?;
        fixed.push((*addr, end, v, shape, origin.clone()));
    }
    fixed.sort_by_key(|f| (f.0, std::cmp::Reverse(f.1)));
    let mut groups: Vec<BufferSpec> = Vec::new();
    for (addr, end, v, shape, origin) in &fixed {
        let key = format!("view:{}:{}", v.func, v.view);
        let role = roles.get(&key).copied().unwrap_or_default();
        let overlapping = groups.last_mut().filter(|g| {
            g.address
                .is_some_and(|a| *addr < a.saturating_add(g.elements as i64))
        });
        let spec = match overlapping {
            Some(g) => g,
            None => {
                let mut name = origin.clone();
                let mut k = 2;
                while groups.iter().any(|g| g.name == name) || buffers.contains_key(&name) {
                    name = format!("{origin}_{k}");
                    k += 1;
                }
                groups.push(BufferSpec {
                    name,
                    elem: v.elem.name().to_string(),
                    elements: 0,
                    shape: Vec::new(),
                    address: Some(*addr),
                    role: Role::Unused,
                });
                groups
                    .last_mut()
                    .ok_or_else(|| err("internal: no buffer group".into()))?
            }
        };
        check_elem(spec, v)?;
        let start = spec.address.unwrap_or(0);
        let need = usize::try_from(end - start).unwrap_or(0);
        if need >= spec.elements {
            if *addr == start {
                spec.shape = shape.clone();
            }
            spec.elements = need;
        }
        spec.role = spec.role.with(role);
    }
    // A placement names the buffer holding its address, or places a new one there.
    let mut claimed: BTreeSet<String> = BTreeSet::new();
    for (name, addr) in places {
        if buffers.contains_key(name) {
            continue;
        }
        let holding = groups.iter_mut().find(|g| {
            g.address
                .is_some_and(|a| a <= *addr && *addr < a.saturating_add(g.elements.max(1) as i64))
        });
        match holding {
            Some(g) if claimed.contains(&g.name) => {
                return Err(err(format!(
                    "--place {name}={addr}: the address is inside buffer '{}' (elements {} to {}), placed already",
                    g.name,
                    g.address.unwrap_or(0),
                    g.address.unwrap_or(0) + g.elements as i64 - 1
                )))
            }
            Some(g) => g.name.clone_from(name),
            None => groups.push(BufferSpec {
                name: name.clone(),
                elem: "f32".into(),
                elements: 0,
                shape: Vec::new(),
                address: Some(*addr),
                role: Role::Unused,
            }),
        }
        claimed.insert(name.clone());
    }
    groups.sort_by_key(|g| g.address);
    let mut all: Vec<BufferSpec> = buffers.into_values().collect();
    all.extend(groups);
    for s in &mut scratch {
        s.role = roles
            .get(&format!("lx:{}", s.name))
            .copied()
            .unwrap_or_default();
    }

    // Scalars: every argument that is not a buffer.
    let mut scalar_specs: Vec<ScalarSpec> = Vec::new();
    let mut tensors: Vec<TensorArgSpec> = Vec::new();
    for f in &module.funcs {
        for (name, ty) in &f.args {
            if arg_buffers.contains(name) {
                continue;
            }
            if let Type::Tensor { elem, .. } = ty {
                if !tensors.iter().any(|t| &t.name == name) {
                    tensors.push(TensorArgSpec {
                        name: name.clone(),
                        elem: elem.name().to_string(),
                        shape: ty.static_shape().unwrap_or_default(),
                    });
                }
                continue;
            }
            let Some(s) = scalar_type(ty) else { continue };
            match scalar_specs.iter_mut().find(|x| &x.name == name) {
                Some(x) => x.functions.push(f.name.clone()),
                None => scalar_specs.push(ScalarSpec {
                    name: name.clone(),
                    dtype: s.name().to_string(),
                    functions: vec![f.name.clone()],
                    value: texts
                        .get(name)
                        .cloned()
                        .or_else(|| ints.get(name).map(|v| v.to_string())),
                }),
            }
        }
    }
    for s in &scalar_specs {
        if s.value.is_none() {
            let line = format!(
                "--arg {}=VALUE ({}; an argument of {})",
                s.name,
                s.dtype,
                s.functions
                    .iter()
                    .map(|f| format!("@{f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !missing
                .iter()
                .any(|m| m.starts_with(&format!("--arg {}=", s.name)))
            {
                missing.push(line);
            }
        }
    }
    // Sizes' SSA names may be given too (kept from before sizes were traced).
    for f in &module.funcs {
        collect_size_names(&f.body, &mut arg_names);
    }
    arg_names.sort();
    arg_names.dedup();

    Ok(Plan {
        inputs: KtirInputs {
            buffers: all,
            scratchpads: scratch,
            scalars: scalar_specs,
            tensors,
            missing,
        },
        arg_buffers,
        scalars,
        arg_names,
    })
}

fn arg_type(module: &Module, name: &str) -> String {
    module
        .funcs
        .iter()
        .flat_map(|f| f.args.iter())
        .find(|(n, _)| n == name)
        .and_then(|(_, t)| scalar_type(t))
        .map_or("index".into(), |s| s.name().to_string())
}

fn collect_size_names(block: &Block, out: &mut Vec<String>) {
    for op in &block.ops {
        for b in op.kind.regions() {
            collect_size_names(b, out);
        }
        if let OpKind::ConstructMemoryView { sizes, strides, .. } = &op.kind {
            for s in sizes.iter().chain(strides) {
                if let SizeOperand::Dynamic(v) = s {
                    out.push(v.name.clone());
                }
            }
        }
    }
}

fn check_elem(spec: &BufferSpec, v: &DramView) -> Result<(), DriverError> {
    if spec.elem != v.elem.name() {
        return Err(DriverError::new(
            Stage::Ktir,
            format!(
                "'%{}' is viewed as both {} and {} (view '%{}' in @{})",
                spec.name,
                spec.elem,
                v.elem.name(),
                v.view,
                v.func
            ),
        ));
    }
    Ok(())
}

/// Elements from a buffer's start to the end of a view at `offset` in it, and the view's
/// shape; checked arithmetic throughout.
fn reach_of(
    v: &DramView,
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
) -> Result<(usize, Vec<usize>), DriverError> {
    let overflow = || {
        DriverError::new(
            Stage::Ktir,
            format!(
                "@{}: view '%{}' over '%{}' (sizes {sizes:?}, strides {strides:?}) spans more than {} elements, the most an address can reach (see docs/limits.md)",
                v.func,
                v.view,
                v.buffer.as_deref().unwrap_or("?"),
                i64::MAX
            ),
        )
    };
    let extent = view_extent(sizes, strides).ok_or_else(overflow)?;
    let needed = if extent == 0 {
        0
    } else {
        offset.max(0).checked_add(extent).ok_or_else(overflow)?
    };
    let elements = usize::try_from(needed).map_err(|_| overflow())?;
    Ok((elements, sizes.iter().map(|&n| n.max(0) as usize).collect()))
}

/// Elements from a view's first to its last addressed element (`1 + sum (n-1)*|stride|`),
/// 0 for an empty view, `None` when that does not fit an `i64`.
fn view_extent(sizes: &[i64], strides: &[i64]) -> Option<i64> {
    if sizes.iter().any(|&n| n <= 0) {
        return Some(0);
    }
    let mut extent: i64 = 1;
    for (&n, &st) in sizes.iter().zip(strides) {
        let reach = (n - 1).checked_mul(i64::try_from(st.unsigned_abs()).ok()?)?;
        extent = extent.checked_add(reach)?;
    }
    Some(extent)
}

/// Walks a block in order, tracking what is known of each `index` value, and calls
/// `visit` on every op (after its result is tracked).
fn walk(
    block: &Block,
    grid: &[usize],
    env: &mut BTreeMap<String, Val>,
    visit: &mut dyn FnMut(&ktir::ast::Op, &BTreeMap<String, Val>),
) {
    for op in &block.ops {
        // Values defined inside regions (loop variables, block arguments) are known only
        // at run time; a loop variable whose bounds are known lies between them.
        if let OpKind::For {
            induction,
            lower,
            upper,
            ..
        } = &op.kind
        {
            let bounds = interval(env.get(&lower.name)).zip(interval(env.get(&upper.name)));
            if let Some(((lo, _), (_, hi))) = bounds {
                if let Some(last) = hi.checked_sub(1).filter(|&last| last >= lo) {
                    env.insert(induction.clone(), Val::Range { lo, hi: last });
                }
            }
        }
        for b in op.kind.regions() {
            walk(b, grid, env, visit);
        }
        if let Some(result) = op.results.first() {
            if let Some(mut v) = track(&op.kind, &op.result_types, grid, env) {
                // A constant address is named after the value that holds it.
                if let Val::Known { origin, .. } = &mut v {
                    if origin.is_empty() {
                        origin.clone_from(result);
                    }
                }
                env.insert(result.clone(), v);
            }
        }
        visit(op, env);
    }
}

/// What an op's (first) result is, from its operands.
fn track(
    kind: &OpKind,
    types: &[Type],
    grid: &[usize],
    env: &BTreeMap<String, Val>,
) -> Option<Val> {
    use ktir::ast::{ElementwiseOp, Literal};
    let get = |n: &str| env.get(n).cloned();
    let unknown = |operands: Vec<&ktir::ast::Value>| {
        let mut missing = BTreeSet::new();
        for o in operands {
            match env.get(&o.name) {
                Some(Val::Unknown { missing: m }) => missing.extend(m.iter().cloned()),
                // An index argument used in arithmetic other than an address offset is a
                // scalar the user has to give.
                Some(Val::Addr { buffer, offset: 0 }) => {
                    missing.insert(buffer.clone());
                }
                _ => {}
            }
        }
        Val::Unknown { missing }
    };
    Some(match kind {
        OpKind::Constant {
            value: Literal::Int(v),
        } => Val::Known {
            v: *v,
            origin: String::new(),
        },
        // One id: along the named grid dimension, or the linear id over the whole grid.
        OpKind::GetComputeTileId { dim } if types.len() == 1 => {
            let n = match dim {
                Some(d) => *grid.get(*d)?,
                None => grid.iter().product(),
            };
            let hi = i64::try_from(n).ok()?.checked_sub(1)?;
            if hi < 0 {
                return None;
            }
            Val::Range { lo: 0, hi }
        }
        OpKind::Cast { operand, .. } => match get(&operand.name)? {
            v @ (Val::Known { .. } | Val::Unknown { .. } | Val::Range { .. }) => v,
            _ => unknown(vec![operand]),
        },
        OpKind::RuntimeArgExtract {
            field,
            input,
            input_type,
        } => match (field, input_type) {
            (RuntimeArgField::Value, _) => match get(&input.name)? {
                v @ (Val::Known { .. } | Val::Unknown { .. }) => v,
                _ => unknown(vec![input]),
            },
            (RuntimeArgField::Granularity, Type::RuntimeArg { granularity, .. }) => Val::Known {
                v: (*granularity)?,
                origin: String::new(),
            },
            (RuntimeArgField::Upperbound, Type::RuntimeArg { upperbound, .. }) => Val::Known {
                v: (*upperbound)?,
                origin: String::new(),
            },
            _ => unknown(vec![input]),
        },
        OpKind::Elementwise { op, operands } if operands.len() == 2 => {
            let (a, b) = (get(&operands[0].name), get(&operands[1].name));
            let known = |x: &Option<Val>| match x {
                Some(Val::Known { v, .. }) => Some(*v),
                _ => None,
            };
            let origin = |x: &Option<Val>| match x {
                Some(Val::Known { origin, .. }) => origin.clone(),
                _ => String::new(),
            };
            let (ia, ib) = (interval(a.as_ref()), interval(b.as_ref()));
            match (op, known(&a), known(&b)) {
                (
                    ElementwiseOp::AddI | ElementwiseOp::SubI | ElementwiseOp::MulI,
                    Some(x),
                    Some(y),
                ) => {
                    let v = match op {
                        ElementwiseOp::AddI => x.checked_add(y),
                        ElementwiseOp::SubI => x.checked_sub(y),
                        _ => x.checked_mul(y),
                    };
                    let o = origin(&a);
                    Val::Known {
                        v: v?,
                        origin: if o.is_empty() { origin(&b) } else { o },
                    }
                }
                // Numbers known to lie in ranges (one of them at least not a constant).
                _ if ia.is_some() && ib.is_some() => {
                    match ia.zip(ib).and_then(|(x, y)| range_op(*op, x, y)) {
                        // Constants divided: a constant.
                        Some((lo, hi)) if lo == hi => Val::Known {
                            v: lo,
                            origin: String::new(),
                        },
                        Some((lo, hi)) => Val::Range { lo, hi },
                        None => unknown(vec![&operands[0], &operands[1]]),
                    }
                }
                // An address plus or minus a number: exact when the number is, else a
                // range of offsets where the number has one.
                (ElementwiseOp::AddI | ElementwiseOp::SubI, _, _) if ib.is_some() => {
                    let (lo, hi) = ib?;
                    let shift = if *op == ElementwiseOp::SubI {
                        (hi.checked_neg()?, lo.checked_neg()?)
                    } else {
                        (lo, hi)
                    };
                    shift_address(a, shift)
                        .unwrap_or_else(|| unknown(vec![&operands[0], &operands[1]]))
                }
                (ElementwiseOp::AddI, _, _) if ia.is_some() => shift_address(b, ia?)
                    .unwrap_or_else(|| unknown(vec![&operands[0], &operands[1]])),
                // An address plus an offset computed at run time from what the analysis
                // does not follow: the buffer is known, the offset is checked when the
                // view is used.
                (ElementwiseOp::AddI | ElementwiseOp::SubI, _, _) => match (a, b) {
                    (Some(Val::Addr { buffer, .. } | Val::AddrAtRunTime { buffer, .. }), _) => {
                        Val::AddrAtRunTime {
                            buffer,
                            offsets: None,
                        }
                    }
                    (_, Some(Val::Addr { buffer, .. } | Val::AddrAtRunTime { buffer, .. }))
                        if *op == ElementwiseOp::AddI =>
                    {
                        Val::AddrAtRunTime {
                            buffer,
                            offsets: None,
                        }
                    }
                    _ => unknown(vec![&operands[0], &operands[1]]),
                },
                _ => unknown(vec![&operands[0], &operands[1]]),
            }
        }
        _ => {
            // Index results of anything else are known only at run time.
            if !types.first().is_some_and(|t| matches!(t, Type::Scalar(_))) {
                return None;
            }
            unknown(kind.operands())
        }
    })
}

/// The range `[lo, hi]` a number lies in: a constant's is itself.
fn interval(v: Option<&Val>) -> Option<(i64, i64)> {
    match v? {
        Val::Known { v, .. } => Some((*v, *v)),
        Val::Range { lo, hi } => Some((*lo, *hi)),
        _ => None,
    }
}

/// The range of `x op y` for `x` in `a` and `y` in `b`; `None` for an op the analysis does
/// not follow, a divisor that may be zero or negative, or an overflow.
fn range_op(
    op: ktir::ast::ElementwiseOp,
    (alo, ahi): (i64, i64),
    (blo, bhi): (i64, i64),
) -> Option<(i64, i64)> {
    use ktir::ast::ElementwiseOp as E;
    let corners = |f: fn(i64, i64) -> Option<i64>| -> Option<(i64, i64)> {
        let c = [f(alo, blo)?, f(alo, bhi)?, f(ahi, blo)?, f(ahi, bhi)?];
        Some((*c.iter().min()?, *c.iter().max()?))
    };
    match op {
        E::AddI => Some((alo.checked_add(blo)?, ahi.checked_add(bhi)?)),
        E::SubI => Some((alo.checked_sub(bhi)?, ahi.checked_sub(blo)?)),
        E::MulI => corners(i64::checked_mul),
        // Division and remainder by a positive divisor of a number that is not negative
        // (tile ids and loop variables split into block and lane).
        E::DivSI | E::DivUI | E::FloorDivSI if alo >= 0 && blo > 0 => corners(i64::checked_div),
        E::CeilDivSI if alo >= 0 && blo > 0 => {
            corners(|x, y| x.checked_add(y.checked_sub(1)?)?.checked_div(y))
        }
        E::RemSI | E::RemUI if alo >= 0 && blo > 0 => {
            if blo == bhi && ahi - alo < blo && alo % blo <= ahi % blo {
                Some((alo % blo, ahi % blo))
            } else {
                Some((0, ahi.min(bhi - 1)))
            }
        }
        _ => None,
    }
}

/// An address moved by an offset in `[lo, hi]`: exact when `lo == hi` and the address is.
fn shift_address(address: Option<Val>, (lo, hi): (i64, i64)) -> Option<Val> {
    Some(match address? {
        Val::Addr { buffer, offset } if lo == hi => Val::Addr {
            buffer,
            offset: offset.checked_add(lo)?,
        },
        Val::Addr { buffer, offset } => Val::AddrAtRunTime {
            buffer,
            offsets: Some((offset.checked_add(lo)?, offset.checked_add(hi)?)),
        },
        Val::AddrAtRunTime { buffer, offsets } => Val::AddrAtRunTime {
            buffer,
            offsets: match offsets {
                Some((l, h)) => Some((l.checked_add(lo)?, h.checked_add(hi)?)),
                None => None,
            },
        },
        _ => return None,
    })
}
