//! The decompositions and device ops behind Split, Conv, CumSum, Where, Equal, Greater,
//! Less, Cast, Trilu, TopK and reductions over any axes, through the whole pipeline: each
//! case of `tests/pipeline/` (a small graph, see its README) is compiled, lowered to KTIR,
//! simulated and compared with the reference evaluator within its dtype's tolerance, for
//! two seeds of random inputs.

use driver::{run_pipeline, PipelineOptions};
use std::path::Path;

/// Every case, with the device ops whose kernels its KTIR must contain.
const CASES: &[(&str, &[&str])] = &[
    ("split_last_axis", &["slice"]),
    ("split_inner_axis", &["slice"]),
    ("split_first_axis", &["slice"]),
    ("where_broadcast", &["greater", "where"]),
    ("where_bool_input", &["where"]),
    ("where_column_condition", &["to_dtype", "where", "greater"]),
    ("compare_cast", &["equal", "lesser", "greater", "to_dtype"]),
    ("cast_floats", &["to_dtype"]),
    ("trilu_data", &["where"]),
    ("cumsum_last_axis", &["batchmatmul"]),
    ("cumsum_inner_axis", &["reshape", "batchmatmul"]),
    ("cumsum_first_axis", &["batchmatmul"]),
    ("cumsum_vector", &["reshape", "batchmatmul"]),
    ("conv_depthwise_causal", &["concat", "slice", "mul", "add"]),
    ("conv_depthwise_strided", &["concat", "slice", "mul", "add"]),
    ("conv_grouped", &["concat", "slice", "batchmatmul", "add"]),
    ("conv_full", &["concat", "slice", "batchmatmul", "add"]),
    (
        "conv_channel_multiplier",
        &["concat", "slice", "batchmatmul"],
    ),
    ("topk_router", &["topk"]),
    ("topk_wide_rows", &["topk"]),
    ("topk_smallest_axis0", &["transpose", "topk"]),
    ("topk_ties_nan", &["topk"]),
    ("reduce_sum_inner_axis", &["transpose", "sum"]),
    // The transpose that brings the two axes together keeps the stick: it is a view.
    ("reduce_max_two_axes", &["reshape", "max"]),
    ("reduce_mean_all", &["reshape", "mean"]),
    ("reduce_sum_experts", &["transpose", "sum"]),
    ("reduce_last_keepdims0", &["sum", "reshape"]),
    ("moe_routing", &["topk", "equal", "to_dtype", "sum"]),
    ("matmul_unit_dims", &["batchmatmul"]),
    ("matmul_computed_lhs", &["reciprocal", "batchmatmul"]),
    // Matmul epilogues: the members are named in the matmul kernel's header.
    ("matmul_epilogue_bias_gelu", &["batchmatmul", "add", "gelu"]),
    (
        "matmul_epilogue_swiglu",
        &["batchmatmul", "silu", "mul", "add"],
    ),
    ("matmul_epilogue_k_split", &["batchmatmul", "add", "relu"]),
    (
        "matmul_epilogue_batched",
        &["batchmatmul", "add", "mul", "sigmoid"],
    ),
    (
        "reshape_views",
        &["batchmatmul", "transpose", "add", "reshape"],
    ),
    ("gqa_repeat_views", &["expand", "transpose", "batchmatmul"]),
    ("matmul_k_split_scatter", &["batchmatmul"]),
    ("local_slices", &["slice", "concat", "exp"]),
];

fn case_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pipeline")
}

/// Runs case `name` with double buffering on or off; its outputs must match the reference.
fn run_case(name: &str, double_buffer: bool) -> driver::PipelineResult {
    run_case_split(name, double_buffer, &[])
}

/// [`run_case`] with work-division hints: (device op, one split per iteration dim).
fn run_case_split(
    name: &str,
    double_buffer: bool,
    hints: &[(&str, &[usize])],
) -> driver::PipelineResult {
    let file = format!("{name}.json");
    let source = std::fs::read_to_string(case_dir().join(&file)).unwrap();
    let mut options = PipelineOptions::default();
    options.compile.double_buffer = double_buffer;
    for (op, splits) in hints {
        options
            .compile
            .hints
            .insert(op.to_string(), splits.to_vec());
    }
    let r = run_pipeline(&source, &file, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(r.run.passed, "{name}: {:?}", r.run.outputs);
    r
}

#[test]
fn every_case_is_listed() {
    let mut on_disk: Vec<String> = std::fs::read_dir(case_dir())
        .expect("tests/pipeline")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn every_case_runs_within_tolerance() {
    for (name, kernels) in CASES {
        let path = case_dir().join(format!("{name}.json"));
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for seed in [0, 7] {
            let options = PipelineOptions {
                seed,
                ..PipelineOptions::default()
            };
            let r = run_pipeline(&source, &format!("{name}.json"), &options)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(r.run.passed, "{name} (seed {seed}): {:?}", r.run.outputs);
            assert_eq!(r.run.outputs.len(), r.graph.outputs.len(), "{name}");
            for k in *kernels {
                assert!(
                    r.ktir.contains(&format!("({k})")),
                    "{name}: no {k} kernel in\n{}",
                    r.ktir
                );
            }
        }
    }
}

#[test]
fn routing_indices_select_the_experts() {
    // Logits whose top two are known: expert 4 then expert 1 for every token. The gates
    // are the softmax of those two logits at positions 4 and 1, zero elsewhere.
    let path = case_dir().join("moe_routing.json");
    let source = std::fs::read_to_string(path).unwrap();
    let mut options = PipelineOptions::default();
    let logits: Vec<f32> = (0..8)
        .flat_map(|_| [0.0, 2.0, -1.0, 0.5, 3.0, 1.0])
        .collect();
    options.inputs.insert(
        "logits".into(),
        driver::graph::Tensor::new(driver::graph::DType::F16, vec![1, 8, 6], logits).unwrap(),
    );
    let r = run_pipeline(&source, "moe_routing.json", &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.passed, "{:?}", r.run.outputs);
    // The reference agrees with the hand computation, so the comparison above is about
    // the right numbers.
    let g = driver::load_graph(&source, "moe_routing.json").unwrap();
    let out = driver::graph::evaluate(&g, &options.inputs).unwrap();
    assert_eq!(&out["i"].data[..2], &[4.0, 1.0]);
    let p = 1.0 / (1.0 + (-1.0f32).exp());
    let gates = &out["g"].data[..6];
    assert!((gates[4] - p).abs() < 1e-3 && (gates[1] - (1.0 - p)).abs() < 1e-3);
    assert_eq!([gates[0], gates[2], gates[3], gates[5]], [0.0; 4]);
}

#[test]
fn k_padding_of_a_computed_operand_stays_out_of_a_k_split_product() {
    // K = 100 over two cores: 64 and 36 real lanes; the second core clears its last 28.
    let path = case_dir().join("matmul_computed_lhs.json");
    let source = std::fs::read_to_string(path).unwrap();
    let mut options = PipelineOptions::default();
    options.compile.hints.insert("mm".into(), vec![1, 1, 2]);
    let r = run_pipeline(&source, "matmul_computed_lhs.json", &options)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.run.passed, "{:?}", r.run.outputs);
    assert!(r.ktir.contains("ktdp.inter_tile_reduce"), "{}", r.ktir);
    assert!(r.ktir.contains("[0, 36] [4, 28] [1, 1]"), "{}", r.ktir);
}

#[test]
fn reshapes_that_regroup_whole_sticks_run_no_kernel() {
    for double_buffer in [true, false] {
        let r = run_case("reshape_views", double_buffer);
        let has_kernel = |node: &str| {
            r.ktir
                .lines()
                .any(|l| l.contains("func.func @k") && l.contains(&format!("_{node}(")))
        };
        // Heads of 128 elements are two whole sticks: splitting rows into them, merging
        // them back (through a chain of two reshapes), and splitting a graph input move
        // no byte.
        for view in [
            "q_split",
            "k_split",
            "v_split",
            "merge_batch",
            "merge_rows",
            "x_split",
            "mix_merge",
            // A transpose of whole heads that keeps the stick, read as a matmul's A, takes
            // its input's bytes relabelled.
            "q_heads",
        ] {
            assert!(!has_kernel(view), "{view} still copies:\n{}", r.ktir);
        }
        // Heads of 32 elements share sticks: those reshapes copy. A transpose of the stick
        // (k_heads_t), one whose reader needs it as a matmul's B (v_heads) and one written
        // for the reshape that reads it (from_heads, so merge_batch is a view) copy too.
        for copy in [
            "small_heads",
            "small_merge",
            "k_heads_t",
            "v_heads",
            "from_heads",
            "o_proj",
        ] {
            assert!(has_kernel(copy), "no kernel for {copy}");
        }
    }
}

#[test]
fn an_expand_read_by_a_reshape_writes_the_reshape_s_layout() {
    for double_buffer in [true, false] {
        let r = run_case("gqa_repeat_views", double_buffer);
        for gone in ["k_unsqueeze", "k_repeat", "v_unsqueeze", "v_repeat"] {
            assert!(
                !r.ktir
                    .lines()
                    .any(|l| l.contains("func.func @k") && l.contains(&format!("_{gone}("))),
                "{gone} still copies:\n{}",
                r.ktir
            );
        }
    }
}

#[test]
fn a_k_group_whose_rows_divide_reduce_scatters_its_sum() {
    for double_buffer in [true, false] {
        // `proj` split as a K group of 8 with every core reading its own B (the cost model
        // prefers B shared by M pairs, which are not reduce-scattered).
        let r = run_case_split(
            "matmul_k_split_scatter",
            double_buffer,
            &[("proj", &[1, 2, 8])],
        );
        let kernel = |name: &str| {
            let start = r
                .ktir
                .find(&format!("_{name}("))
                .unwrap_or_else(|| panic!("no {name}"));
            let end = r.ktir[start..]
                .find("func.return")
                .map_or(r.ktir.len(), |e| start + e);
            r.ktir[start..end].to_string()
        };
        // The eight cores of a group each sum and store their own rows: eight reductions,
        // each to another core of the group, and eight stores.
        let scattered = kernel("proj");
        assert_eq!(
            scattered.matches("ktdp.inter_tile_reduce").count(),
            8,
            "{scattered}"
        );
        assert!(scattered.contains("s0 * 8 - 7 == 0"), "{scattered}");
        assert_eq!(scattered.matches("ktdp.store").count(), 8, "{scattered}");
        let gathered = kernel("proj_odd");
        assert_eq!(
            gathered.matches("ktdp.inter_tile_reduce").count(),
            1,
            "{gathered}"
        );
        assert_eq!(gathered.matches("ktdp.store").count(), 1, "{gathered}");
    }
}

#[test]
fn slices_and_concats_of_a_core_s_own_slice_join_the_fused_kernel() {
    for double_buffer in [true, false] {
        let r = run_case("local_slices", double_buffer);
        let fused = r
            .ktir
            .lines()
            .find(|l| l.contains("// fused ") && l.contains("rope_x1 (slice)"))
            .unwrap_or_else(|| panic!("RoPE's halves are not fused:\n{}", r.ktir));
        for member in [
            "rope_x2 (slice)",
            "rope_neg_x2 (neg)",
            "rope_rotate (concat)",
            "rope_out (add)",
            "small_a (slice)",
            "small_join (concat)",
            "small_mul (mul)",
        ] {
            assert!(fused.contains(member), "{member} not in {fused}");
        }
        assert!(
            fused.contains("never stored: x1, x2, neg_x2, rot"),
            "{fused}"
        );
        // The slice and concat of rows, and the slice that is a graph output, keep their
        // own kernels.
        for alone in ["rows_top", "rows_join", "head_out"] {
            assert!(
                r.ktir
                    .lines()
                    .any(|l| l.contains("func.func @k") && l.contains(&format!("_{alone}("))),
                "{alone} has no kernel of its own:\n{}",
                r.ktir
            );
        }
    }
}
