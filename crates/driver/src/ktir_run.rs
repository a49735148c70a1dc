//! Running a KTIR file on its own (no model graph): buffers are found from the memory views
//! the kernels build (see [`crate::ktir_plan`]), filled from given data or seeded random
//! numbers, and every function runs in module order sharing buffers by argument name.

use crate::ktir_plan::{plan, KtirInputs, Plan, Role, ScalarValue};
use crate::session::{execute, Arg, Init, Launch, Placement, Program, ScratchInit};
use crate::source_map::kernel_links;
use crate::{DriverError, KernelLink, Progress, RunOptions, RunResult, Stage};
use ktir::ast::{Module, ScalarType, Type};
use serde::Serialize;
use sim::timing::Schedule;
use sim::{ExecLimits, KernelValue, Machine};
use std::collections::BTreeMap;

/// A DRAM buffer the kernels read or write through memory views.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BufferSpec {
    /// The argument name (without `%`), the `--place` name, or for views at constant
    /// addresses the name of the constant the lowest view's address comes from.
    pub name: String,
    /// Element type of the views over it.
    pub elem: String,
    /// Elements needed to hold every view over it.
    pub elements: usize,
    /// The shape of the largest view over it (for `.npy` files).
    pub shape: Vec<usize>,
    /// Its DRAM address in elements, when fixed (a constant in the program or
    /// `--place`); `None` for argument buffers the runner places.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub address: Option<i64>,
    /// Whether the kernels load it, store it, or both.
    pub role: Role,
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

/// The DRAM buffers a module's kernels address, from their memory views (over arguments,
/// at offsets from them, and at constant addresses).
///
/// Extents are computed with checked arithmetic; a view whose extent overflows is an
/// error naming it. A view over `%a + OFFSET` (an `arith.addi`/`arith.subi` of an argument
/// and constants or given `--arg` values) sizes buffer `a` to cover it too.
pub fn buffer_specs(
    module: &Module,
    args: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, DriverError> {
    Ok(plan(module, args, &BTreeMap::new(), &BTreeMap::new())?
        .inputs
        .buffers)
}

fn check(text: &str) -> Result<(Module, Vec<ktir::Diagnostic>), DriverError> {
    ktir::check(text).map_err(|d| {
        let lines: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        DriverError::from_ktir(lines.join("\n"), None, &d)
    })
}

/// The buffers of a KTIR module's text (see [`buffer_specs`]); for checking given contents
/// before a run.
pub fn buffers_of(
    text: &str,
    args: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, DriverError> {
    let (module, _) = check(text)?;
    buffer_specs(&module, args)
}

/// Everything a run of a KTIR module takes (buffers, scratchpad views, scalars, tensor
/// arguments, and what is still missing), given the values and placements in `options`:
/// what `spyre ktir inputs` prints and the page's Run panel lists.
pub fn ktir_inputs(text: &str, options: &RunOptions) -> Result<KtirInputs, DriverError> {
    let (module, _) = check(text)?;
    Ok(plan(&module, &options.args, &options.scalars, &options.places)?.inputs)
}

/// Reads `.npy` files given by name (`NAME.npy` holds the contents of buffer, scratchpad
/// view or tensor argument `NAME`) and checks each against what it fills: the element
/// type must match (see [`crate::npy::check_dtype`]) and the shape be the full shape
/// (or, for buffers, flat with their element count). A name that matches nothing is an
/// error naming the closest one.
pub fn read_npy_inputs(
    text: &str,
    options: &RunOptions,
    files: &[(String, Vec<u8>)],
) -> Result<BTreeMap<String, Vec<f32>>, DriverError> {
    let inputs = ktir_inputs(text, options)?;
    let err = |m: String| DriverError::new(Stage::Ktir, m);
    let mut names: Vec<&str> = inputs
        .buffers
        .iter()
        .map(|b| b.name.as_str())
        .chain(inputs.scratchpads.iter().map(|s| s.name.as_str()))
        .chain(inputs.tensors.iter().map(|t| t.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = BTreeMap::new();
    for (name, bytes) in files {
        let file = format!("{name}.npy");
        let array = crate::npy::read(bytes, options.limits.max_dram_elements)
            .map_err(|e| err(format!("{file}: {e}")))?;
        let (elem, shape, flat) = if let Some(b) = inputs.buffers.iter().find(|b| &b.name == name) {
            if b.address.is_some() {
                // A placed buffer may hold more than its views reach, in any shape.
                let n = array.data.len();
                if n < b.elements {
                    return Err(err(format!(
                        "{file}: the array has {n} elements; the views at address {} reach {} elements of buffer '{name}'",
                        b.address.unwrap_or(0),
                        b.elements
                    )));
                }
                (b.elem.clone(), array.shape.clone(), None)
            } else {
                (b.elem.clone(), b.shape.clone(), Some(b.elements))
            }
        } else if let Some(s) = inputs.scratchpads.iter().find(|s| &s.name == name) {
            (s.elem.clone(), s.shape.clone(), None)
        } else if let Some(t) = inputs.tensors.iter().find(|t| &t.name == name) {
            (t.elem.clone(), t.shape.clone(), None)
        } else {
            return Err(err(format!(
                "input '{name}' ({file}) matches no buffer, scratchpad view or tensor argument{}; inputs: {}",
                graph::did_you_mean(name, &names),
                list(&names)
            )));
        };
        let flat_ok = flat.is_some_and(|n| array.shape.len() == 1 && array.shape[0] == n);
        if array.shape != shape && !flat_ok {
            return Err(err(format!(
                "{file}: the array has shape {:?}; '{name}' needs shape {shape:?}{}",
                array.shape,
                flat.map_or(String::new(), |n| format!(
                    " ({n} elements, or a flat array of them)"
                ))
            )));
        }
        crate::npy::check_dtype(&array, &elem)
            .map_err(|e| err(format!("{file}: {e} ('{name}' holds {elem})")))?;
        out.insert(name.clone(), array.data);
    }
    Ok(out)
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
/// depends on, and every buffer content a buffer, scratchpad view or tensor argument; a
/// misspelt name is an error (with the closest name) rather than silently unused.
fn check_names(plan: &Plan, options: &RunOptions) -> Result<(), DriverError> {
    let params: Vec<&str> = plan.arg_names.iter().map(String::as_str).collect();
    for name in options.args.keys().chain(options.scalars.keys()) {
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
    let i = &plan.inputs;
    let mut inputs: Vec<&str> = i
        .buffers
        .iter()
        .map(|s| s.name.as_str())
        .chain(i.scratchpads.iter().map(|s| s.name.as_str()))
        .chain(i.tensors.iter().map(|t| t.name.as_str()))
        .collect();
    inputs.sort_unstable();
    inputs.dedup();
    for name in options.buffers.keys() {
        if !inputs.contains(&name.as_str()) {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "input '{name}' matches no buffer, scratchpad view or tensor argument{}; inputs: {}",
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
    rng.signed_unit_f32s(n)
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

/// Row-major element addresses of a view's points.
fn view_addresses(base: i64, shape: &[usize], strides: &[i64]) -> Option<Vec<i64>> {
    let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..n {
        let mut a = base;
        for (&i, &s) in index.iter().zip(strides) {
            a = a.checked_add(i64::try_from(i).ok()?.checked_mul(s)?)?;
        }
        out.push(a);
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(out)
}

/// [`run_module`], also returning each function's lines and events.
pub(crate) fn run_mapped(
    text: &str,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<((RunResult, Vec<KernelLink>), Schedule), DriverError> {
    let (module, warnings) = check(text)?;
    let plan = plan(&module, &options.args, &options.scalars, &options.places)?;
    check_names(&plan, options)?;
    if !plan.inputs.missing.is_empty() {
        return Err(DriverError::new(
            Stage::Ktir,
            format!(
                "missing inputs ({}):\n  {}",
                plan.inputs.missing.len(),
                plan.inputs.missing.join("\n  ")
            ),
        ));
    }
    let mut specs = plan.inputs.buffers.clone();
    // A placed buffer takes the size of the data given for it when that is larger.
    for s in &mut specs {
        if let (Some(_), Some(d)) = (s.address, options.buffers.get(&s.name)) {
            if d.len() != s.elements {
                if d.len() < s.elements {
                    return Err(DriverError::new(
                        Stage::Ktir,
                        format!(
                            "input for '{}' has {} elements; the views at address {} reach {}",
                            s.name,
                            d.len(),
                            s.address.unwrap_or(0),
                            s.elements
                        ),
                    ));
                }
                s.elements = d.len();
                s.shape = vec![d.len()];
            }
        }
        if s.address.is_some() && s.elements == 0 && !options.timing_only {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "--place {}={}: no view with a size known before the run uses that address and no {}.npy gives the buffer's contents",
                    s.name,
                    s.address.unwrap_or(0),
                    s.name
                ),
            ));
        }
    }
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
            at: spec.address,
            init: if options.timing_only {
                Init::Reserve(spec.elements)
            } else {
                Init::Data(data)
            },
        });
    }
    // Fixed addresses first, in address order, so buffers never overlap.
    placements.sort_by_key(|p| (p.at.is_none(), p.at));
    let mut scratch = Vec::new();
    for s in &plan.inputs.scratchpads {
        let Some(data) = options.buffers.get(&s.name) else {
            continue;
        };
        let n: usize = s.shape.iter().product();
        if data.len() != n {
            return Err(DriverError::new(
                Stage::Ktir,
                format!(
                    "input for scratchpad view '%{}' has {} elements; its shape {:?} needs {n}",
                    s.name,
                    data.len(),
                    s.shape
                ),
            ));
        }
        if options.timing_only {
            continue;
        }
        let addrs = view_addresses(s.address, &s.shape, &s.strides).ok_or_else(|| {
            DriverError::new(
                Stage::Ktir,
                format!("scratchpad view '%{}': its addresses overflow", s.name),
            )
        })?;
        for &core in &s.cores {
            scratch.push(ScratchInit {
                core,
                elem: ScalarType::parse(&s.elem).unwrap_or(ScalarType::F32),
                addrs: addrs.clone(),
                data: data.clone(),
                name: s.name.clone(),
            });
        }
    }
    let mut launches = Vec::new();
    for f in &module.funcs {
        let mut args = Vec::new();
        for (name, ty) in &f.args {
            if plan.arg_buffers.contains(name) {
                args.push(Arg::Buffer(name.clone()));
            } else if let Some(v) = plan.scalars.get(name) {
                args.push(Arg::Value(match v {
                    ScalarValue::Int(i) => KernelValue::Int(*i),
                    ScalarValue::Float(x) => KernelValue::Float(*x),
                }));
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
        scratch,
        launches,
        reuse: false,
    };
    execute(program, options, progress, |sim, sched| {
        let mut result = crate::session::result(sim, sched, options, None);
        result.functions = functions;
        result.buffers = specs
            .into_iter()
            .map(|s| {
                let data = sim.take_buffer_data(&s.name).unwrap_or_default();
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
        for (sizes, strides) in [("2, 2", "1099511627776, 1"), ("268435456, 2", "2, 1")] {
            let mut result = None;
            let allocated = allocation_counter::measure(|| {
                result = Some(run_ktir(&viewed(sizes, strides, "0"), &plain()));
            });
            let e = result.unwrap().unwrap_err();
            assert!(e.message.contains("buffer '%x' needs"), "{e}");
            assert!(e.message.contains("max_dram_elements"), "{e}");
            // Refused from the sizes alone, not after building gigabytes of inputs.
            assert!(allocated.bytes_max < 1 << 24, "{allocated:?}");
        }
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
        // The offset is only known at run time (a loop variable through arith.maxsi, which
        // the runner's analysis does not bound), so %x is sized from the plain view over
        // it, and the row stride reaches where buffer %y is placed.
        let text = viewed("2, 2", "64, 1", "0")
            .replace(
                "%off = arith.constant 0 : index",
                "%c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n  scf.for %i = %c0 to %c2 step %c1 {\n  %twice = arith.muli %i, %c2 : index\n  %off = arith.maxsi %twice, %c0 : index",
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
