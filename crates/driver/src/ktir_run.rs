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
pub fn buffer_specs(
    module: &Module,
    args: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, DriverError> {
    let mut specs: BTreeMap<String, BufferSpec> = BTreeMap::new();
    for f in &module.funcs {
        let arg_names: Vec<&str> = f.args.iter().map(|(n, _)| n.as_str()).collect();
        let mut stack = vec![&f.body];
        while let Some(block) = stack.pop() {
            for op in &block.ops {
                stack.extend(op.kind.regions());
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
                if !arg_names.contains(&base.name.as_str()) {
                    continue;
                }
                let value = |s: &SizeOperand| -> Result<i64, DriverError> {
                    match s {
                        SizeOperand::Static(v) => Ok(*v),
                        SizeOperand::Dynamic(v) => args.get(&v.name).copied().ok_or_else(|| {
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
                let mut extent: i64 = 1;
                let mut shape = Vec::new();
                for (s, st) in sizes.iter().zip(strides) {
                    let (n, st) = (value(s)?, value(st)?);
                    if n <= 0 {
                        extent = 0;
                    } else {
                        extent = extent
                            .checked_add((n - 1).checked_mul(st.abs()).unwrap_or(i64::MAX))
                            .unwrap_or(i64::MAX);
                    }
                    shape.push(n.max(0) as usize);
                }
                let elem = op
                    .result_types
                    .first()
                    .and_then(Type::elem)
                    .unwrap_or(ScalarType::F32);
                let elements = usize::try_from(extent).unwrap_or(usize::MAX);
                let entry = specs
                    .entry(base.name.clone())
                    .or_insert_with(|| BufferSpec {
                        name: base.name.clone(),
                        elem: elem_name(elem),
                        elements: 0,
                        shape: Vec::new(),
                    });
                if entry.elem != elem_name(elem) {
                    return Err(DriverError::new(
                        Stage::Ktir,
                        format!(
                            "'%{}' is viewed as both {} and {}",
                            base.name,
                            entry.elem,
                            elem.name()
                        ),
                    ));
                }
                if elements >= entry.elements {
                    entry.elements = elements;
                    entry.shape = shape;
                }
            }
        }
    }
    Ok(specs.into_values().collect())
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
                let n: usize = shape.iter().product();
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
}
