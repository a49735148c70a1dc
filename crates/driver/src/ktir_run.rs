//! Running a KTIR file on its own (no model graph): buffers are found from the memory views
//! the kernels build over their `index` arguments, filled from given data or seeded random
//! numbers, and every function runs in module order sharing buffers by argument name.

use crate::session::{execute, Arg, Init, Launch, Placement, Program};
use crate::source_map::kernel_links;
use crate::{DriverError, KernelLink, Progress, RunOptions, RunResult, Stage};
use ktir::ast::{Module, OpKind, ScalarType, SizeOperand, Type};
use serde::Serialize;
use sim::timing::Schedule;
use sim::{ExecLimits, KernelValue, Machine};
use std::collections::BTreeMap;

/// A buffer argument the kernels read or write through memory views.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BufferSpec {
    /// The argument name (without `%`).
    pub name: String,
    /// Element type of the views over it.
    pub elem: String,
    /// Elements needed to hold every view over it.
    pub elements: usize,
    /// The shape of the largest view over it (for `.npy` files).
    pub shape: Vec<usize>,
}

/// Settings of a KTIR run (the fields of [`RunOptions`] that apply to KTIR modules).
#[derive(Clone, Debug)]
pub struct KtirRunOptions {
    /// The machine.
    pub machine: Machine,
    /// Values of scalar `index` arguments, by name.
    pub args: BTreeMap<String, i64>,
    /// Contents of buffers, by name (others get seeded random values in [-1, 1)).
    pub inputs: BTreeMap<String, Vec<f32>>,
    /// Seed of the random buffer contents.
    pub seed: u64,
    /// Execution bounds.
    pub limits: ExecLimits,
    /// Compute timing only: buffers hold no data and no numbers are computed (see
    /// [`sim::Simulator::new_timing_only`]); given inputs are checked for size only.
    pub timing_only: bool,
}

impl Default for KtirRunOptions {
    fn default() -> Self {
        KtirRunOptions {
            machine: crate::PipelineOptions::default().machine,
            args: BTreeMap::new(),
            inputs: BTreeMap::new(),
            seed: 0,
            limits: ExecLimits::default(),
            timing_only: false,
        }
    }
}

/// What a KTIR run produced: the one run result.
pub type KtirRunResult = RunResult;

impl From<&KtirRunOptions> for RunOptions {
    fn from(o: &KtirRunOptions) -> RunOptions {
        RunOptions {
            machine: o.machine.clone(),
            seed: o.seed,
            limits: o.limits.clone(),
            timing_only: o.timing_only,
            args: o.args.clone(),
            buffers: o.inputs.clone(),
            ..RunOptions::default()
        }
    }
}

fn elem_name(e: ScalarType) -> String {
    e.name().to_string()
}

/// The buffers a module's kernels address, from their memory views over arguments.
///
/// Extents are computed with checked arithmetic; a view whose extent overflows is an
/// error naming it. A view over `%a + OFFSET` (an `arith.addi`/`arith.subi` of an argument
/// and constants or given `--arg` values) sizes buffer `a` to cover it too.
pub fn buffer_specs(
    module: &Module,
    args: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, DriverError> {
    let mut specs: BTreeMap<String, BufferSpec> = BTreeMap::new();
    for f in &module.funcs {
        // Index values known before the run: constants and given scalar arguments.
        let mut known: BTreeMap<&str, i64> = BTreeMap::new();
        // Values that are an argument's address plus a known offset.
        let mut bases: BTreeMap<&str, (&str, i64)> = BTreeMap::new();
        for (name, _) in &f.args {
            match args.get(name) {
                Some(v) => {
                    known.insert(name, *v);
                }
                None => {
                    bases.insert(name, (name, 0));
                }
            }
        }
        let mut stack = vec![&f.body];
        while let Some(block) = stack.pop() {
            for op in &block.ops {
                stack.extend(op.kind.regions());
                if let Some(result) = op.results.first() {
                    track_index(&op.kind, result, &mut known, &mut bases);
                }
                let OpKind::ConstructMemoryView {
                    base,
                    sizes,
                    strides,
                    memory_space,
                    ..
                } = &op.kind
                else {
                    continue;
                };
                if matches!(memory_space, Some(ktir::MemorySpace::Local { .. })) {
                    continue;
                }
                let Some(&(buffer, offset)) = bases.get(base.name.as_str()) else {
                    continue;
                };
                let view = op.results.first().map_or("?", String::as_str);
                let value = |s: &SizeOperand| -> Result<i64, DriverError> {
                    match s {
                        SizeOperand::Static(v) => Ok(*v),
                        SizeOperand::Dynamic(v) => args.get(&v.name).or_else(|| known.get(v.name.as_str())).copied().ok_or_else(|| {
                            DriverError::new(
                                Stage::Ktir,
                                format!(
                                    "@{}: the size of the view over '%{}' depends on '%{}'; give it with --arg {}=VALUE",
                                    f.name, base.name, v.name, v.name
                                ),
                            )
                        }),
                    }
                };
                let mut size_values = Vec::new();
                let mut stride_values = Vec::new();
                for (s, st) in sizes.iter().zip(strides) {
                    size_values.push(value(s)?);
                    stride_values.push(value(st)?);
                }
                let overflow = || {
                    DriverError::new(
                        Stage::Ktir,
                        format!(
                            "@{}: view '%{view}' over '%{buffer}' (sizes {size_values:?}, strides {stride_values:?}) spans more than {} elements, the most an address can reach (see docs/limits.md)",
                            f.name,
                            i64::MAX
                        ),
                    )
                };
                let extent = view_extent(&size_values, &stride_values).ok_or_else(overflow)?;
                let needed = if extent == 0 {
                    0
                } else {
                    offset.max(0).checked_add(extent).ok_or_else(overflow)?
                };
                let shape = size_values.iter().map(|&n| n.max(0) as usize).collect();
                let elem = op
                    .result_types
                    .first()
                    .and_then(Type::elem)
                    .unwrap_or(ScalarType::F32);
                let elements = usize::try_from(needed).map_err(|_| overflow())?;
                let entry = specs
                    .entry(buffer.to_string())
                    .or_insert_with(|| BufferSpec {
                        name: buffer.to_string(),
                        elem: elem_name(elem),
                        elements: 0,
                        shape: Vec::new(),
                    });
                if entry.elem != elem_name(elem) {
                    return Err(DriverError::new(
                        Stage::Ktir,
                        format!(
                            "'%{}' is viewed as both {} and {}",
                            buffer,
                            entry.elem,
                            elem.name()
                        ),
                    ));
                }
                if elements >= entry.elements {
                    // The shape written to .npy files is that of the view reaching furthest
                    // from the buffer's start.
                    if offset == 0 || entry.elements == 0 {
                        entry.shape = shape;
                    }
                    entry.elements = elements;
                }
            }
        }
    }
    Ok(specs.into_values().collect())
}

/// The buffers of a KTIR module's text (see [`buffer_specs`]); for checking given contents
/// before a run.
pub fn buffers_of(
    text: &str,
    args: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, DriverError> {
    let (module, _) = ktir::check(text).map_err(|d| {
        let lines: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        DriverError::from_ktir(lines.join("\n"), None, &d)
    })?;
    buffer_specs(&module, args)
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

/// Follows index arithmetic a view's base may come from: constants, given arguments and
/// `arith.addi`/`arith.subi`/`arith.muli` of them, and an argument's address plus or minus
/// a known offset.
fn track_index<'a>(
    kind: &'a OpKind,
    result: &'a str,
    known: &mut BTreeMap<&'a str, i64>,
    bases: &mut BTreeMap<&'a str, (&'a str, i64)>,
) {
    use ktir::ast::{ElementwiseOp, Literal};
    match kind {
        OpKind::Constant {
            value: Literal::Int(v),
        } => {
            known.insert(result, *v);
        }
        OpKind::Elementwise { op, operands } if operands.len() == 2 => {
            let (a, b) = (operands[0].name.as_str(), operands[1].name.as_str());
            let (ka, kb) = (known.get(a).copied(), known.get(b).copied());
            match (op, ka, kb) {
                (ElementwiseOp::AddI, Some(x), Some(y)) => {
                    if let Some(v) = x.checked_add(y) {
                        known.insert(result, v);
                    }
                }
                (ElementwiseOp::SubI, Some(x), Some(y)) => {
                    if let Some(v) = x.checked_sub(y) {
                        known.insert(result, v);
                    }
                }
                (ElementwiseOp::MulI, Some(x), Some(y)) => {
                    if let Some(v) = x.checked_mul(y) {
                        known.insert(result, v);
                    }
                }
                (ElementwiseOp::AddI, None, Some(k)) | (ElementwiseOp::SubI, None, Some(k)) => {
                    let k = if *op == ElementwiseOp::SubI {
                        k.checked_neg()
                    } else {
                        Some(k)
                    };
                    if let (Some(&(buf, off)), Some(k)) = (bases.get(a), k) {
                        if let Some(off) = off.checked_add(k) {
                            bases.insert(result, (buf, off));
                        }
                    }
                }
                (ElementwiseOp::AddI, Some(k), None) => {
                    if let Some(&(buf, off)) = bases.get(b) {
                        if let Some(off) = off.checked_add(k) {
                            bases.insert(result, (buf, off));
                        }
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// Checks the buffers against the DRAM limit before any of them is built: each alone and
/// all together (see docs/limits.md). Timing-only runs store nothing, so no limit applies.
fn check_dram_limit(specs: &[BufferSpec], options: &RunOptions) -> Result<(), DriverError> {
    if options.timing_only {
        return Ok(());
    }
    let limit = options.limits.max_dram_elements;
    let mut total: usize = 0;
    for s in specs {
        total = total.saturating_add(s.elements);
        if total > limit {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "buffer '%{}' needs {} elements (views of shape {:?}), which brings DRAM to {} elements, more than the limit of {limit} (max_dram_elements, see docs/limits.md)",
                    s.name, s.elements, s.shape, total
                ),
            ));
        }
    }
    Ok(())
}

/// Every given scalar must name an argument of some function or a value a view's size
/// depends on, and every buffer content a buffer or tensor argument; a misspelt name is an error (with the closest name) rather than silently unused.
fn check_names(
    module: &Module,
    specs: &[BufferSpec],
    options: &RunOptions,
) -> Result<(), DriverError> {
    let mut params: Vec<&str> = module
        .funcs
        .iter()
        .flat_map(|f| f.args.iter().map(|(n, _)| n.as_str()))
        .collect();
    // A view's size may depend on a value computed in the kernel (a runtime argument's
    // extraction), which --arg then gives for sizing its buffer.
    for f in &module.funcs {
        let mut stack = vec![&f.body];
        while let Some(block) = stack.pop() {
            for op in &block.ops {
                stack.extend(op.kind.regions());
                if let OpKind::ConstructMemoryView { sizes, strides, .. } = &op.kind {
                    for s in sizes.iter().chain(strides) {
                        if let SizeOperand::Dynamic(v) = s {
                            params.push(&v.name);
                        }
                    }
                }
            }
        }
    }
    params.sort_unstable();
    params.dedup();
    for name in options.args.keys() {
        if !params.contains(&name.as_str()) {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "--arg {name}: no function has an argument '%{name}'{}; arguments: {}",
                    graph::did_you_mean(name, &params),
                    list(&params)
                ),
            ));
        }
    }
    let tensors = module
        .funcs
        .iter()
        .flat_map(|f| f.args.iter())
        .filter(|(_, t)| matches!(t, Type::Tensor { .. }))
        .map(|(n, _)| n.as_str());
    let mut inputs: Vec<&str> = specs
        .iter()
        .map(|s| s.name.as_str())
        .chain(tensors)
        .collect();
    inputs.sort_unstable();
    inputs.dedup();
    for name in options.buffers.keys() {
        if !inputs.contains(&name.as_str()) {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "input '{name}' matches no buffer or tensor argument{}; inputs: {}",
                    graph::did_you_mean(name, &inputs),
                    list(&inputs)
                ),
            ));
        }
    }
    Ok(())
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Parses, verifies and runs every function of a KTIR module in order.
pub fn run_ktir(
    text: &str,
    options: &KtirRunOptions,
) -> Result<(KtirRunResult, Schedule), DriverError> {
    run_module(text, &options.into(), &mut |_| {})
}

/// Seeded random values in [-1, 1).
fn random(rng: &mut graph::SplitMix64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
        .collect()
}

/// Verifies a KTIR module, finds its buffers and arguments, and runs every function in
/// order through the session's run loop.
pub(crate) fn run_module(
    text: &str,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunResult, Schedule), DriverError> {
    run_mapped(text, options, progress).map(|((r, _), s)| (r, s))
}

/// [`run_module`], also returning each function's lines and events.
pub(crate) fn run_mapped(
    text: &str,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<((RunResult, Vec<KernelLink>), Schedule), DriverError> {
    let (module, warnings) = ktir::check(text).map_err(|d| {
        let lines: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        DriverError::from_ktir(lines.join("\n"), None, &d)
    })?;
    let specs = buffer_specs(&module, &options.args)?;
    check_names(&module, &specs, options)?;
    check_dram_limit(&specs, options)?;
    let mut rng = graph::SplitMix64::new(options.seed);
    let mut placements = Vec::new();
    for spec in &specs {
        let elem = ScalarType::parse(&spec.elem).unwrap_or(ScalarType::F32);
        let data = match options.buffers.get(&spec.name) {
            Some(d) if d.len() == spec.elements => d.clone(),
            Some(d) => {
                return Err(DriverError::new(
                    Stage::Ktir,
                    format!(
                        "input for '%{}' has {} elements; its views need {}",
                        spec.name,
                        d.len(),
                        spec.elements
                    ),
                ))
            }
            None if options.timing_only => Vec::new(),
            None => random(&mut rng, spec.elements),
        };
        placements.push(Placement {
            name: spec.name.clone(),
            elem,
            init: if options.timing_only {
                Init::Reserve(spec.elements)
            } else {
                Init::Data(data)
            },
        });
    }
    let mut launches = Vec::new();
    for f in &module.funcs {
        let mut args = Vec::new();
        for (name, ty) in &f.args {
            if specs.iter().any(|s| &s.name == name) {
                args.push(Arg::Buffer(name.clone()));
            } else if let Some(v) = options.args.get(name) {
                args.push(Arg::Value(KernelValue::Int(*v)));
            } else if let Type::Tensor { .. } = ty {
                // Tensor arguments: given contents or seeded random values.
                let shape = ty.static_shape().ok_or_else(|| {
                    DriverError::new(
                        Stage::Ktir,
                        format!("@{}: tensor argument '%{name}' has a dynamic shape", f.name),
                    )
                })?;
                let n = shape
                    .iter()
                    .try_fold(1usize, |n, &d| n.checked_mul(d))
                    .filter(|&n| n <= options.limits.max_tensor_elements)
                    .ok_or_else(|| {
                        DriverError::new(
                            Stage::Ktir,
                            format!(
                                "@{}: tensor argument '%{name}' of shape {shape:?} has more than {} elements (max_tensor_elements, see docs/limits.md)",
                                f.name, options.limits.max_tensor_elements
                            ),
                        )
                    })?;
                let data = match options.buffers.get(name) {
                    Some(d) if d.len() == n => d.clone(),
                    Some(d) => {
                        return Err(DriverError::new(
                            Stage::Ktir,
                            format!(
                                "input for '%{name}' has {} elements; its type needs {n}",
                                d.len()
                            ),
                        ))
                    }
                    None if options.timing_only => Vec::new(),
                    None => random(&mut rng, n),
                };
                args.push(Arg::Value(KernelValue::Tensor { shape, data }));
            } else {
                return Err(DriverError::new(
                    Stage::Ktir,
                    format!(
                        "@{}: argument '%{name}' is neither a buffer (no memory view uses it) nor given with --arg {name}=VALUE",
                        f.name
                    ),
                ));
            }
        }
        launches.push(Launch {
            func: f.name.clone(),
            args,
        });
    }
    let functions = launches.iter().map(|l| l.func.clone()).collect();
    let program = Program {
        text,
        module: &module,
        placements,
        launches,
    };
    execute(program, options, progress, |sim, sched| {
        let mut result = crate::session::result(sim, sched, options, None);
        result.functions = functions;
        result.buffers = specs
            .into_iter()
            .map(|s| {
                let data = sim
                    .buffer(&s.name)
                    .map(|b| b.data.clone())
                    .unwrap_or_default();
                (s, data)
            })
            .collect();
        result.warnings = warnings.iter().map(|w| w.to_string()).collect();
        let kernels = kernel_links(&module, text, &result.events);
        Ok((result, kernels))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADD: &str = r#"
func.func @scale(%x: index, %y: index, %n: index) attributes {grid = [2]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %id = ktdp.get_compute_tile_id : index
  %r = arith.muli %id, %c4 : index
  %xv = ktdp.construct_memory_view %x, sizes: [8, 16], strides: [16, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x16xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [8, 16], strides: [16, 1] {
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 7 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  } : memref<8x16xf32>
  %xt = ktdp.construct_access_tile %xv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x16xf32> -> !ktdp.access_tile<4x16xindex>
  %yt = ktdp.construct_access_tile %yv[%r, %c0] {
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 3 - d0 >= 0, d1 >= 0, 15 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  } : memref<8x16xf32> -> !ktdp.access_tile<4x16xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<4x16xindex> -> tensor<4x16xf32>
  %b = arith.addf %a, %a : tensor<4x16xf32>
  ktdp.store %b, %yt : tensor<4x16xf32>, !ktdp.access_tile<4x16xindex>
  return
}
"#;

    fn options() -> KtirRunOptions {
        KtirRunOptions {
            machine: Machine::preset("tiny4").unwrap(),
            args: BTreeMap::from([("n".to_string(), 3)]),
            inputs: BTreeMap::new(),
            seed: 7,
            limits: ExecLimits::default(),
            timing_only: false,
        }
    }

    #[test]
    fn buffers_come_from_memory_views_and_results_are_computed() {
        let (r, _) = run_ktir(ADD, &options()).unwrap();
        let names: Vec<&str> = r.buffers.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(r.buffers[0].0.elements, 128);
        assert_eq!(r.buffers[0].0.shape, vec![8, 16]);
        let (x, y) = (&r.buffers[0].1, &r.buffers[1].1);
        for i in 0..128 {
            assert_eq!(y[i], x[i] * 2.0);
        }
        assert!(r.total_cycles > 0.0);
    }

    #[test]
    fn given_inputs_are_used_and_missing_scalars_are_named() {
        let mut o = options();
        o.inputs
            .insert("x".into(), (0..128).map(|i| i as f32).collect());
        let (r, _) = run_ktir(ADD, &o).unwrap();
        assert_eq!(r.buffers[1].1[5], 10.0);
        o.args.clear();
        let e = run_ktir(ADD, &o).unwrap_err();
        assert!(e.message.contains("--arg n=VALUE"), "{e}");
        o.inputs.insert("x".into(), vec![0.0; 3]);
        o.args.insert("n".into(), 1);
        let e = run_ktir(ADD, &o).unwrap_err();
        assert!(e.message.contains("has 3 elements"), "{e}");
    }

    #[test]
    fn invalid_ktir_reports_diagnostics_with_positions() {
        let e = run_ktir("func.func @f() {\n  %x = arith.bogus\n}\n", &options()).unwrap_err();
        assert_eq!(e.stage, "ktir");
        assert!(e.message.contains("2:8: error"), "{e}");
    }

    /// One function loading a [2, 2] tile from a view of the given sizes and strides over
    /// `%x + offset` and storing it to `%y`.
    fn viewed(sizes: &str, strides: &str, offset: &str) -> String {
        let ty = sizes.replace(", ", "x");
        format!(
            r#"
func.func @f(%x: index, %y: index) attributes {{grid = [1]}} {{
  %c0 = arith.constant 0 : index
  %off = arith.constant {offset} : index
  %xa = arith.addi %x, %off : index
  %xv = ktdp.construct_memory_view %xa, sizes: [{sizes}], strides: [{strides}] {{
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  }} : memref<{ty}xf32>
  %yv = ktdp.construct_memory_view %y, sizes: [2, 2], strides: [2, 1] {{
    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 1 - d1 >= 0)>,
    memory_space = #ktdp.memory_space<global>
  }} : memref<2x2xf32>
  %xt = ktdp.construct_access_tile %xv[%c0, %c0] {{
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 1 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  }} : memref<{ty}xf32> -> !ktdp.access_tile<2x2xindex>
  %yt = ktdp.construct_access_tile %yv[%c0, %c0] {{
    access_tile_set = affine_set<(d0, d1) : (d0 >= 0, 1 - d0 >= 0, d1 >= 0, 1 - d1 >= 0)>,
    access_tile_order = affine_map<(d0, d1) -> (d0, d1)>
  }} : memref<2x2xf32> -> !ktdp.access_tile<2x2xindex>
  %a = ktdp.load %xt : !ktdp.access_tile<2x2xindex> -> tensor<2x2xf32>
  ktdp.store %a, %yt : tensor<2x2xf32>, !ktdp.access_tile<2x2xindex>
  return
}}
"#
        )
    }

    fn plain() -> KtirRunOptions {
        KtirRunOptions {
            args: BTreeMap::new(),
            ..options()
        }
    }

    #[test]
    fn overflowing_view_extents_are_errors_naming_the_view() {
        for (sizes, strides) in [
            ("4611686018427387904, 4", "4, 1"),
            ("2, 2", "9223372036854775807, 1"),
            ("2, 2", "-9223372036854775808, 1"),
        ] {
            let e = run_ktir(&viewed(sizes, strides, "0"), &plain()).unwrap_err();
            assert!(e.message.contains("view '%xv' over '%x'"), "{e}");
            assert!(e.message.contains("9223372036854775807 elements"), "{e}");
        }
    }

    #[test]
    fn the_dram_limit_is_checked_before_any_buffer_is_built() {
        let started = std::time::Instant::now();
        for (sizes, strides) in [("2, 2", "1099511627776, 1"), ("268435456, 2", "2, 1")] {
            let e = run_ktir(&viewed(sizes, strides, "0"), &plain()).unwrap_err();
            assert!(e.message.contains("buffer '%x' needs"), "{e}");
            assert!(e.message.contains("max_dram_elements"), "{e}");
        }
        // Refused from the sizes alone, not after building gigabytes of inputs.
        assert!(started.elapsed().as_secs() < 2);
        // Timing-only runs store nothing, so the same buffer is planned.
        let o = KtirRunOptions {
            timing_only: true,
            ..plain()
        };
        run_ktir(&viewed("268435456, 2", "2, 1", "0"), &o).unwrap();
    }

    #[test]
    fn a_view_at_a_known_offset_sizes_its_buffer() {
        let (r, _) = run_ktir(&viewed("2, 2", "2, 1", "96"), &plain()).unwrap();
        assert_eq!(r.buffers[0].0.elements, 100);
        let (x, y) = (&r.buffers[0].1, &r.buffers[1].1);
        assert_eq!(&y[..], &x[96..100]);
    }

    #[test]
    fn a_view_reaching_into_another_buffer_names_both() {
        // The offset is only known at run time (a loop variable), so %x is sized from the
        // plain view over it, and the row stride reaches where buffer %y is placed.
        let text = viewed("2, 2", "64, 1", "0")
            .replace(
                "%off = arith.constant 0 : index",
                "%c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n  scf.for %i = %c0 to %c2 step %c1 {\n  %off = arith.muli %i, %c2 : index",
            )
            .replace("  return\n", "  }\n  return\n")
            .replace(
                "  %yv = ",
                "  %xd = ktdp.construct_memory_view %x, sizes: [2, 2], strides: [2, 1] {\n    coordinate_set = affine_set<(d0, d1) : (d0 >= 0, d1 >= 0)>,\n    memory_space = #ktdp.memory_space<global>\n  } : memref<2x2xf32>\n  %yv = ",
            );
        let e = run_ktir(&text, &plain()).unwrap_err();
        assert!(e.message.contains("over buffer 'x'"), "{e}");
        assert!(e.message.contains("of buffer 'y'"), "{e}");
    }

    #[test]
    fn unknown_argument_and_input_names_are_errors_with_a_suggestion() {
        let mut o = options();
        o.args.insert("nn".into(), 3);
        let e = run_ktir(ADD, &o).unwrap_err();
        assert!(e.message.contains("--arg nn"), "{e}");
        assert!(e.message.contains("did you mean 'n'"), "{e}");
        let mut o = options();
        o.inputs.insert("yy".into(), vec![0.0; 128]);
        let e = run_ktir(ADD, &o).unwrap_err();
        assert!(e.message.contains("input 'yy'"), "{e}");
        assert!(e.message.contains("did you mean 'y'"), "{e}");
    }
}
