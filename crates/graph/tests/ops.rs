//! Known-value tests (one table row per case). With the onnxruntime cases of
//! `tests/graph/ops/` they check every supported op against values our evaluator did not
//! compute (see `every_supported_op_has_a_known_value_case`).

mod common;

use std::collections::BTreeSet;

use common::*;
use graph::{AttrValue, DType, SUPPORTED_OPS};

struct Case {
    what: &'static str,
    op: &'static str,
    ins: Vec<Operand>,
    attrs: Vec<(&'static str, AttrValue)>,
    /// expected outputs: dtype, shape, data
    out: Vec<(DType, Vec<usize>, Vec<f32>)>,
}

fn case(
    what: &'static str,
    op: &'static str,
    ins: Vec<Operand>,
    attrs: Vec<(&'static str, AttrValue)>,
    shape: &[usize],
    data: &[f32],
) -> Case {
    Case {
        what,
        op,
        ins,
        attrs,
        out: vec![(DType::F32, shape.to_vec(), data.to_vec())],
    }
}

fn bcase(
    what: &'static str,
    op: &'static str,
    ins: Vec<Operand>,
    shape: &[usize],
    data: &[f32],
) -> Case {
    Case {
        what,
        op,
        ins,
        attrs: vec![],
        out: vec![(DType::Bool, shape.to_vec(), data.to_vec())],
    }
}

const E: f32 = std::f32::consts::E;
const M6: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];

fn cases() -> Vec<Case> {
    vec![
        // --- MatMul
        case(
            "matmul 2x3 @ 3x2",
            "MatMul",
            vec![f(&[2, 3], &M6), f(&[3, 2], &[7., 8., 9., 10., 11., 12.])],
            vec![],
            &[2, 2],
            &[58., 64., 139., 154.],
        ),
        case(
            "matmul 1-D @ 1-D",
            "MatMul",
            vec![f(&[3], &[1., 2., 3.]), f(&[3], &[4., 5., 6.])],
            vec![],
            &[],
            &[32.],
        ),
        case(
            "matmul 1-D @ 2-D",
            "MatMul",
            vec![f(&[2], &[1., 2.]), f(&[2, 3], &M6)],
            vec![],
            &[3],
            &[9., 12., 15.],
        ),
        case(
            "matmul 2-D @ 1-D",
            "MatMul",
            vec![f(&[2, 2], &[1., 2., 3., 4.]), f(&[2], &[1., 1.])],
            vec![],
            &[2],
            &[3., 7.],
        ),
        case(
            "matmul batch @ 2-D",
            "MatMul",
            vec![f(&[2, 1, 2], &[1., 2., 3., 4.]), f(&[2, 1], &[1., 10.])],
            vec![],
            &[2, 1, 1],
            &[21., 43.],
        ),
        case(
            "matmul batch broadcast both",
            "MatMul",
            vec![
                f(&[2, 1, 1, 2], &[1., 2., 3., 4.]),
                f(&[3, 2, 1], &[1., 0., 0., 1., 1., 1.]),
            ],
            vec![],
            &[2, 3, 1, 1],
            &[1., 2., 3., 3., 4., 7.],
        ),
        case(
            "matmul empty K",
            "MatMul",
            vec![f(&[2, 0], &[]), f(&[0, 2], &[])],
            vec![],
            &[2, 2],
            &[0.; 4],
        ),
        // --- elementwise binary with broadcasting
        case(
            "add row broadcast",
            "Add",
            vec![f(&[2, 3], &M6), f(&[3], &[10., 20., 30.])],
            vec![],
            &[2, 3],
            &[11., 22., 33., 14., 25., 36.],
        ),
        case(
            "add column x row",
            "Add",
            vec![f(&[2, 1], &[1., 2.]), f(&[1, 3], &[10., 20., 30.])],
            vec![],
            &[2, 3],
            &[11., 21., 31., 12., 22., 32.],
        ),
        case(
            "add scalar",
            "Add",
            vec![f(&[], &[1.]), f(&[2], &[1., 2.])],
            vec![],
            &[2],
            &[2., 3.],
        ),
        case(
            "add rank extension",
            "Add",
            vec![
                f(&[2, 1, 2], &[1., 2., 3., 4.]),
                f(&[3, 1], &[0., 10., 20.]),
            ],
            vec![],
            &[2, 3, 2],
            &[1., 2., 11., 12., 21., 22., 3., 4., 13., 14., 23., 24.],
        ),
        case(
            "sub",
            "Sub",
            vec![f(&[2], &[5., 3.]), f(&[1], &[1.])],
            vec![],
            &[2],
            &[4., 2.],
        ),
        case(
            "mul",
            "Mul",
            vec![f(&[2], &[5., 3.]), f(&[2], &[2., -1.])],
            vec![],
            &[2],
            &[10., -3.],
        ),
        case(
            "div",
            "Div",
            vec![f(&[2], &[5., 3.]), f(&[2], &[2., -4.])],
            vec![],
            &[2],
            &[2.5, -0.75],
        ),
        Case {
            what: "integer div truncates",
            op: "Div",
            ins: vec![
                t(DType::I32, &[2], &[7., -7.]),
                t(DType::I32, &[2], &[2., 2.]),
            ],
            attrs: vec![],
            out: vec![(DType::I32, vec![2], vec![3., -3.])],
        },
        case(
            "pow",
            "Pow",
            vec![f(&[2], &[2., 3.]), f(&[], &[2.])],
            vec![],
            &[2],
            &[4., 9.],
        ),
        // --- unary
        case(
            "neg",
            "Neg",
            vec![f(&[2], &[1., -2.])],
            vec![],
            &[2],
            &[-1., 2.],
        ),
        case(
            "relu",
            "Relu",
            vec![f(&[3], &[-1., 0., 2.])],
            vec![],
            &[3],
            &[0., 0., 2.],
        ),
        case(
            "exp",
            "Exp",
            vec![f(&[2], &[0., 1.])],
            vec![],
            &[2],
            &[1., E],
        ),
        case(
            "log",
            "Log",
            vec![f(&[2], &[1., E])],
            vec![],
            &[2],
            &[0., 1.],
        ),
        case(
            "sqrt",
            "Sqrt",
            vec![f(&[2], &[4., 9.])],
            vec![],
            &[2],
            &[2., 3.],
        ),
        case(
            "reciprocal",
            "Reciprocal",
            vec![f(&[2], &[2., 4.])],
            vec![],
            &[2],
            &[0.5, 0.25],
        ),
        case(
            "tanh",
            "Tanh",
            vec![f(&[2], &[0., 1.])],
            vec![],
            &[2],
            &[0., 0.761_594_2],
        ),
        case(
            "sigmoid",
            "Sigmoid",
            vec![f(&[3], &[0., 2., -2.])],
            vec![],
            &[3],
            &[0.5, 0.880_797_1, 0.119_202_92],
        ),
        case(
            "gelu erf",
            "Gelu",
            vec![f(&[3], &[0., 1., -1.])],
            vec![],
            &[3],
            &[0., 0.841_344_7, -0.158_655_26],
        ),
        case(
            "gelu none",
            "Gelu",
            vec![f(&[1], &[-5.])],
            vec![("approximate", string("none"))],
            &[1],
            &[-1.433_257_4e-6],
        ),
        case(
            "gelu tanh",
            "Gelu",
            vec![f(&[2], &[1., 0.])],
            vec![("approximate", string("tanh"))],
            &[2],
            &[0.841_192, 0.],
        ),
        case(
            "silu",
            "Silu",
            vec![f(&[2], &[1., 0.])],
            vec![],
            &[2],
            &[0.731_058_6, 0.],
        ),
        case(
            "softplus",
            "Softplus",
            vec![f(&[3], &[0., 1., 100.])],
            vec![],
            &[3],
            &[std::f32::consts::LN_2, 1.313_261_7, 100.],
        ),
        case(
            "sin",
            "Sin",
            vec![f(&[2], &[0., std::f32::consts::FRAC_PI_2])],
            vec![],
            &[2],
            &[0., 1.],
        ),
        case(
            "cos",
            "Cos",
            vec![f(&[2], &[0., std::f32::consts::PI])],
            vec![],
            &[2],
            &[1., -1.],
        ),
        // Values from the definitions (alpha (e^(x/alpha) - 1) is 2 (e^-1 - 1) at -2, tanh
        // of ln(1 + e) for Mish at 1, and the closed forms of the hyperbolic functions).
        case(
            "celu alpha 2",
            "Celu",
            vec![f(&[3], &[-2., 0., 3.])],
            vec![("alpha", float(2.))],
            &[3],
            &[-1.264_241_1, 0., 3.],
        ),
        case(
            "thresholded relu above alpha only",
            "ThresholdedRelu",
            vec![f(&[4], &[0.5, 1.0, 1.5, -2.])],
            vec![],
            &[4],
            &[0., 0., 1.5, 0.],
        ),
        case(
            "shrink with a bias",
            "Shrink",
            vec![f(&[4], &[-1., -0.25, 0.25, 1.])],
            vec![("lambd", float(0.5)), ("bias", float(0.1))],
            &[4],
            &[-0.9, 0., 0., 0.9],
        ),
        case(
            "prelu with a per-column slope",
            "PRelu",
            vec![f(&[2, 2], &[-1., 2., -3., 4.]), f(&[2], &[0.1, 0.5])],
            vec![],
            &[2, 2],
            &[-0.1, 2., -0.3, 4.],
        ),
        case(
            "mish",
            "Mish",
            vec![f(&[3], &[-1., 0., 1.])],
            vec![],
            &[3],
            &[-0.303_401_47, 0., 0.865_098_4],
        ),
        // x sigmoid(alpha x) from the definition, sigmoid(2) = 0.880797 and sigmoid(-2)
        // = 0.119203; SwiGLU is that of A times B.
        case(
            "swish alpha 2",
            "Silu",
            vec![f(&[3], &[-1., 0., 1.])],
            vec![("alpha", float(2.))],
            &[3],
            &[-0.119_202_92, 0., 0.880_797_1],
        ),
        case(
            "swiglu",
            "SwiGlu",
            vec![f(&[3], &[-1., 0., 2.]), f(&[3], &[2., 3., 0.5])],
            vec![],
            &[3],
            &[-0.537_882_85, 0., 0.880_797_1],
        ),
        case(
            "swiglu alpha 0.5",
            "SwiGlu",
            vec![f(&[2], &[2., -3.]), f(&[2], &[1., 2.])],
            vec![("alpha", float(0.5))],
            &[2],
            &[1.462_117_2, -1.094_553_1],
        ),
        // A quarter turn (cos 0, sin 1) of the pair (1, 2) is (-2, 1); with cos 0.6 and
        // sin 0.8, interleaved over the first 2 of 4 channels, (1, 2) turns to (-1, 2) and
        // (3, 4) passes through.
        case(
            "rotary embedding quarter turn",
            "RotaryEmbedding",
            vec![
                f(&[1, 1, 1, 2], &[1., 2.]),
                f(&[1, 1, 1], &[0.]),
                f(&[1, 1, 1], &[1.]),
            ],
            vec![],
            &[1, 1, 1, 2],
            &[-2., 1.],
        ),
        case(
            "rotary embedding interleaved, partial, 3-D",
            "RotaryEmbedding",
            vec![
                f(&[1, 1, 4], &[1., 2., 3., 4.]),
                f(&[1, 1, 1], &[0.6]),
                f(&[1, 1, 1], &[0.8]),
            ],
            vec![
                ("interleaved", AttrValue::Int(1)),
                ("num_heads", AttrValue::Int(1)),
                ("rotary_embedding_dim", AttrValue::Int(2)),
            ],
            &[1, 1, 4],
            &[-1., 2., 3., 4.],
        ),
        // A window of no keys before or after: each query sees only the key at its own
        // position, so each output row is that position's value.
        case(
            "attention with a zero-width sliding window",
            "Attention",
            vec![
                f(&[1, 1, 3, 1], &[1., -2., 3.]),
                f(&[1, 1, 3, 1], &[0.5, 4., -1.]),
                f(&[1, 1, 3, 1], &[10., 20., 30.]),
            ],
            vec![
                ("left_window_size", AttrValue::Int(0)),
                ("right_window_size", AttrValue::Int(0)),
            ],
            &[1, 1, 3, 1],
            &[10., 20., 30.],
        ),
        case(
            "tan",
            "Tan",
            vec![f(&[2], &[0., std::f32::consts::FRAC_PI_4])],
            vec![],
            &[2],
            &[0., 1.],
        ),
        case(
            "sinh",
            "Sinh",
            vec![f(&[2], &[0., 1.])],
            vec![],
            &[2],
            &[0., 1.175_201_2],
        ),
        case(
            "cosh",
            "Cosh",
            vec![f(&[2], &[0., 1.])],
            vec![],
            &[2],
            &[1., 1.543_080_6],
        ),
        case(
            "asinh",
            "Asinh",
            vec![f(&[3], &[-1., 0., 1.])],
            vec![],
            &[3],
            &[-0.881_373_6, 0., 0.881_373_6],
        ),
        case(
            "acosh",
            "Acosh",
            vec![f(&[2], &[1., 2.])],
            vec![],
            &[2],
            &[0., 1.316_958],
        ),
        case(
            "atanh",
            "Atanh",
            vec![f(&[2], &[0., 0.5])],
            vec![],
            &[2],
            &[0., 0.549_306_1],
        ),
        case(
            "asin",
            "Asin",
            vec![f(&[3], &[-1., 0., 0.5])],
            vec![],
            &[3],
            &[
                -std::f32::consts::FRAC_PI_2,
                0.,
                std::f32::consts::FRAC_PI_6,
            ],
        ),
        case(
            "acos",
            "Acos",
            vec![f(&[3], &[-1., 0.5, 1.])],
            vec![],
            &[3],
            &[std::f32::consts::PI, std::f32::consts::FRAC_PI_3, 0.],
        ),
        case(
            "atan",
            "Atan",
            vec![f(&[3], &[-1., 0., 2.])],
            vec![],
            &[3],
            &[-std::f32::consts::FRAC_PI_4, 0., 1.107_148_7],
        ),
        case(
            "hardmax picks the first maximum",
            "Hardmax",
            vec![f(&[2, 3], &[1., 3., 3., -1., -2., -1.])],
            vec![],
            &[2, 3],
            &[0., 1., 0., 1., 0., 0.],
        ),
        case(
            "hardmax along axis 0",
            "Hardmax",
            vec![f(&[2, 2], &[1., 5., 2., 4.])],
            vec![("axis", int(0))],
            &[2, 2],
            &[0., 1., 1., 0.],
        ),
        case(
            "l2 normalization",
            "LpNormalization",
            vec![f(&[2, 2], &[3., 4., 1., 0.])],
            vec![],
            &[2, 2],
            &[0.6, 0.8, 1., 0.],
        ),
        case(
            "l1 normalization along axis 0",
            "LpNormalization",
            vec![f(&[2, 2], &[1., 2., 3., -2.])],
            vec![("axis", int(0)), ("p", int(1))],
            &[2, 2],
            &[0.25, 0.5, 0.75, -0.5],
        ),
        case(
            "batch normalization, inference",
            "BatchNormalization",
            vec![
                f(&[1, 2, 1, 2], &[1., 2., 3., 4.]),
                f(&[2], &[1., 2.]),
                f(&[2], &[0., 1.]),
                f(&[2], &[1.5, 3.]),
                f(&[2], &[0.25, 1.]),
            ],
            vec![("epsilon", float(0.))],
            &[1, 2, 1, 2],
            &[-1., 1., 1., 3.],
        ),
        case(
            "instance normalization",
            "InstanceNormalization",
            vec![
                f(&[1, 2, 2], &[1., 3., 0., 4.]),
                f(&[2], &[1., 2.]),
                f(&[2], &[0., 1.]),
            ],
            vec![("epsilon", float(0.))],
            &[1, 2, 2],
            &[-1., 1., -1., 3.],
        ),
        case(
            "group normalization, per-channel scale",
            "GroupNormalization",
            vec![
                f(&[1, 4, 1], &[1., 3., 0., 4.]),
                f(&[4], &[1., 1., 2., 2.]),
                f(&[4], &[0., 0., 1., 1.]),
            ],
            vec![("epsilon", float(0.)), ("num_groups", int(2))],
            &[1, 4, 1],
            &[-1., 1., -1., 3.],
        ),
        case(
            "group normalization, per-group scale (opset 18)",
            "GroupNormalization",
            vec![
                f(&[1, 4, 1], &[1., 3., 0., 4.]),
                f(&[2], &[1., 2.]),
                f(&[2], &[0., 1.]),
            ],
            vec![("epsilon", float(0.)), ("num_groups", int(2))],
            &[1, 4, 1],
            &[-1., 1., -1., 3.],
        ),
        case(
            "mean variance normalization",
            "MeanVarianceNormalization",
            vec![f(&[2, 1, 1, 2], &[1., 3., 5., 7.])],
            vec![],
            &[2, 1, 1, 2],
            &[-1.341_640_8, -0.447_213_6, 0.447_213_6, 1.341_640_8],
        ),
        case(
            "space to depth, DCR",
            "SpaceToDepth",
            vec![f(&[1, 2, 2, 2], &[0., 1., 2., 3., 4., 5., 6., 7.])],
            vec![("blocksize", int(2))],
            &[1, 8, 1, 1],
            &[0., 4., 1., 5., 2., 6., 3., 7.],
        ),
        case(
            "space to depth, CRD",
            "SpaceToDepth",
            vec![f(&[1, 2, 2, 2], &[0., 1., 2., 3., 4., 5., 6., 7.])],
            vec![("blocksize", int(2)), ("mode", string("CRD"))],
            &[1, 8, 1, 1],
            &[0., 1., 2., 3., 4., 5., 6., 7.],
        ),
        case(
            "depth to space, DCR",
            "DepthToSpace",
            vec![f(&[1, 8, 1, 1], &[0., 1., 2., 3., 4., 5., 6., 7.])],
            vec![("blocksize", int(2))],
            &[1, 2, 2, 2],
            &[0., 2., 4., 6., 1., 3., 5., 7.],
        ),
        case(
            "depth to space, CRD",
            "DepthToSpace",
            vec![f(&[1, 8, 1, 1], &[0., 1., 2., 3., 4., 5., 6., 7.])],
            vec![("blocksize", int(2)), ("mode", string("CRD"))],
            &[1, 2, 2, 2],
            &[0., 1., 2., 3., 4., 5., 6., 7.],
        ),
        case(
            "lrn over 3 channels, clipped at the edges",
            "LRN",
            vec![f(&[1, 3, 1, 1], &[1., 2., 2.])],
            vec![
                ("size", int(3)),
                ("alpha", float(3.)),
                ("beta", float(1.)),
                ("bias", float(1.)),
            ],
            &[1, 3, 1, 1],
            &[0.166_666_67, 0.2, 0.222_222_22],
        ),
        // --- softmax, gemm
        case(
            "softmax last axis",
            "Softmax",
            vec![f(&[3], &[1., 2., 3.])],
            vec![],
            &[3],
            &[0.090_030_57, 0.244_728_47, 0.665_240_96],
        ),
        case(
            "softmax axis 0",
            "Softmax",
            vec![f(&[2, 2], &[1., 2., 3., 4.])],
            vec![("axis", int(0))],
            &[2, 2],
            &[0.119_202_92, 0.119_202_92, 0.880_797_1, 0.880_797_1],
        ),
        case(
            "softmax large values",
            "Softmax",
            vec![f(&[2], &[1000., 1000.])],
            vec![],
            &[2],
            &[0.5, 0.5],
        ),
        case(
            "gemm alpha beta transB",
            "Gemm",
            vec![
                f(&[2, 2], &[1., 2., 3., 4.]),
                f(&[2, 2], &[1., 0., 0., 1.]),
                f(&[2], &[1., 1.]),
            ],
            vec![
                ("alpha", float(2.)),
                ("beta", float(0.5)),
                ("transB", int(1)),
            ],
            &[2, 2],
            &[2.5, 4.5, 6.5, 8.5],
        ),
        case(
            "gemm transA",
            "Gemm",
            vec![f(&[2, 3], &M6), f(&[2, 1], &[1., 1.])],
            vec![("transA", int(1))],
            &[3, 1],
            &[5., 7., 9.],
        ),
        case(
            "gemm transB non-square",
            "Gemm",
            vec![f(&[1, 2], &[1., 2.]), f(&[3, 2], &M6)],
            vec![("transB", int(1))],
            &[1, 3],
            &[5., 11., 17.],
        ),
        // --- clip, max, min, where, comparisons, cast
        case(
            "clip attrs",
            "Clip",
            vec![f(&[3], &[-1., 0.5, 2.])],
            vec![("min", float(0.)), ("max", int(1))],
            &[3],
            &[0., 0.5, 1.],
        ),
        case(
            "clip inputs, min omitted",
            "Clip",
            vec![f(&[3], &[-1., 0.5, 2.]), None, f(&[], &[1.5])],
            vec![],
            &[3],
            &[-1., 0.5, 1.5],
        ),
        case(
            "max variadic",
            "Max",
            vec![f(&[2], &[1., 5.]), f(&[2], &[3., 2.]), f(&[1], &[0.])],
            vec![],
            &[2],
            &[3., 5.],
        ),
        case(
            "min variadic",
            "Min",
            vec![f(&[2], &[1., 5.]), f(&[2], &[3., 2.]), f(&[1], &[0.])],
            vec![],
            &[2],
            &[0., 0.],
        ),
        case(
            "where",
            "Where",
            vec![
                t(DType::Bool, &[2], &[1., 0.]),
                f(&[2], &[1., 2.]),
                f(&[], &[10.]),
            ],
            vec![],
            &[2],
            &[1., 10.],
        ),
        bcase(
            "equal",
            "Equal",
            vec![f(&[2], &[1., 2.]), f(&[2], &[1., 3.])],
            &[2],
            &[1., 0.],
        ),
        bcase(
            "less",
            "Less",
            vec![f(&[2], &[1., 2.]), f(&[1], &[2.])],
            &[2],
            &[1., 0.],
        ),
        bcase(
            "greater",
            "Greater",
            vec![f(&[2], &[1., 3.]), f(&[1], &[2.])],
            &[2],
            &[0., 1.],
        ),
        Case {
            what: "cast to i32",
            op: "Cast",
            ins: vec![f(&[3], &[1.7, -1.7, 1e10])],
            attrs: vec![("to", string("i32"))],
            out: vec![(DType::I32, vec![3], vec![1., -1., 2_147_483_648.])],
        },
        Case {
            what: "cast to bool",
            op: "Cast",
            ins: vec![f(&[2], &[0., 2.])],
            attrs: vec![("to", string("bool"))],
            out: vec![(DType::Bool, vec![2], vec![0., 1.])],
        },
        Case {
            what: "cast to f16",
            op: "Cast",
            ins: vec![f(&[1], &[1. / 3.])],
            attrs: vec![("to", string("f16"))],
            out: vec![(DType::F16, vec![1], vec![0.333_251_95])],
        },
        // --- normalisation
        case(
            "layernorm",
            "LayerNormalization",
            vec![
                f(&[3], &[1., 2., 3.]),
                f(&[3], &[1., 1., 1.]),
                f(&[3], &[0., 0., 0.]),
            ],
            vec![("epsilon", float(0.))],
            &[3],
            &[-1.224_744_9, 0., 1.224_744_9],
        ),
        case(
            "layernorm scale bias 2-D",
            "LayerNormalization",
            vec![
                f(&[2, 3], &[1., 2., 3., 2., 4., 6.]),
                f(&[3], &[2., 2., 2.]),
                f(&[1], &[1.]),
            ],
            vec![("epsilon", float(0.))],
            &[2, 3],
            &[-1.449_489_8, 1., 3.449_489_8, -1.449_489_8, 1., 3.449_489_8],
        ),
        case(
            "layernorm no bias axis 0",
            "LayerNormalization",
            vec![f(&[2, 1], &[1., 3.]), f(&[2, 1], &[1., 1.])],
            vec![("epsilon", float(0.)), ("axis", int(0))],
            &[2, 1],
            &[-1., 1.],
        ),
        case(
            "rms norm",
            "SimplifiedLayerNormalization",
            vec![f(&[2], &[3., 4.]), f(&[2], &[1., 2.])],
            vec![("epsilon", float(0.))],
            &[2],
            &[0.848_528_1, 2.262_741_7],
        ),
        // --- reductions
        case(
            "reduce sum axis 1",
            "ReduceSum",
            vec![f(&[2, 3], &M6)],
            vec![("axes", ints(&[1])), ("keepdims", int(0))],
            &[2],
            &[6., 15.],
        ),
        case(
            "reduce sum keepdims",
            "ReduceSum",
            vec![f(&[2, 3], &M6)],
            vec![("axes", ints(&[-1]))],
            &[2, 1],
            &[6., 15.],
        ),
        case(
            "reduce mean axis 0",
            "ReduceMean",
            vec![f(&[2, 3], &M6)],
            vec![("axes", ints(&[0]))],
            &[1, 3],
            &[2.5, 3.5, 4.5],
        ),
        case(
            "reduce max all",
            "ReduceMax",
            vec![f(&[2, 3], &[1., 9., 3., 4., 5., 6.])],
            vec![],
            &[1, 1],
            &[9.],
        ),
        case(
            "reduce max all no keepdims",
            "ReduceMax",
            vec![f(&[2, 3], &[-1., -9., -3., -4., -5., -6.])],
            vec![("keepdims", int(0))],
            &[],
            &[-1.],
        ),
        case(
            "reduce mean middle axis",
            "ReduceMean",
            vec![f(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.])],
            vec![("axes", ints(&[1])), ("keepdims", int(0))],
            &[2, 2],
            &[2., 3., 6., 7.],
        ),
        // --- movement
        case(
            "transpose default",
            "Transpose",
            vec![f(&[2, 3], &M6)],
            vec![],
            &[3, 2],
            &[1., 4., 2., 5., 3., 6.],
        ),
        case(
            "transpose perm 3-D",
            "Transpose",
            vec![f(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.])],
            vec![("perm", ints(&[1, 0, 2]))],
            &[2, 2, 2],
            &[1., 2., 5., 6., 3., 4., 7., 8.],
        ),
        case(
            "reshape -1",
            "Reshape",
            vec![f(&[2, 3], &M6)],
            vec![("shape", ints(&[3, -1]))],
            &[3, 2],
            &M6,
        ),
        case(
            "reshape 0",
            "Reshape",
            vec![f(&[2, 3], &M6)],
            vec![("shape", ints(&[0, 1, -1]))],
            &[2, 1, 3],
            &M6,
        ),
        case(
            "flatten axis 2",
            "Flatten",
            vec![f(&[1, 2, 3], &M6)],
            vec![("axis", int(2))],
            &[2, 3],
            &M6,
        ),
        case(
            "flatten axis 0",
            "Flatten",
            vec![f(&[2, 3], &M6)],
            vec![("axis", int(0))],
            &[1, 6],
            &M6,
        ),
        case(
            "squeeze all",
            "Squeeze",
            vec![f(&[1, 3, 1], &[1., 2., 3.])],
            vec![],
            &[3],
            &[1., 2., 3.],
        ),
        case(
            "squeeze axes",
            "Squeeze",
            vec![f(&[1, 3, 1], &[1., 2., 3.])],
            vec![("axes", ints(&[0]))],
            &[3, 1],
            &[1., 2., 3.],
        ),
        case(
            "unsqueeze",
            "Unsqueeze",
            vec![f(&[3], &[1., 2., 3.])],
            vec![("axes", ints(&[0, -1]))],
            &[1, 3, 1],
            &[1., 2., 3.],
        ),
        case(
            "concat axis 1",
            "Concat",
            vec![f(&[2, 1], &[1., 2.]), f(&[2, 2], &[3., 4., 5., 6.])],
            vec![("axis", int(1))],
            &[2, 3],
            &[1., 3., 4., 2., 5., 6.],
        ),
        case(
            "concat axis 0",
            "Concat",
            vec![f(&[1, 2], &[1., 2.]), f(&[2, 2], &[3., 4., 5., 6.])],
            vec![("axis", int(0))],
            &[3, 2],
            &M6,
        ),
        Case {
            what: "split sizes axis 1",
            op: "Split",
            ins: vec![f(&[2, 3], &M6)],
            attrs: vec![("axis", int(1)), ("split", ints(&[1, 2]))],
            out: vec![
                (DType::F32, vec![2, 1], vec![1., 4.]),
                (DType::F32, vec![2, 2], vec![2., 3., 5., 6.]),
            ],
        },
        Case {
            what: "split equal axis 0",
            op: "Split",
            ins: vec![f(&[2, 3], &M6)],
            attrs: vec![],
            out: vec![
                (DType::F32, vec![1, 3], vec![1., 2., 3.]),
                (DType::F32, vec![1, 3], vec![4., 5., 6.]),
            ],
        },
        case(
            "slice 2-D",
            "Slice",
            vec![f(&[2, 3], &M6)],
            vec![("starts", ints(&[0, 1])), ("ends", ints(&[2, 3]))],
            &[2, 2],
            &[2., 3., 5., 6.],
        ),
        case(
            "slice axes and huge end",
            "Slice",
            vec![f(&[2, 3], &M6)],
            vec![
                ("starts", ints(&[1])),
                ("ends", ints(&[i64::MAX])),
                ("axes", ints(&[-1])),
            ],
            &[2, 2],
            &[2., 3., 5., 6.],
        ),
        case(
            "slice reverse step -2",
            "Slice",
            vec![f(&[5], &[1., 2., 3., 4., 5.])],
            vec![
                ("starts", ints(&[-1])),
                ("ends", ints(&[i64::MIN])),
                ("steps", ints(&[-2])),
            ],
            &[3],
            &[5., 3., 1.],
        ),
        case(
            "slice huge steps",
            "Slice",
            vec![f(&[2, 3], &M6)],
            vec![
                ("starts", ints(&[0, -1])),
                ("ends", ints(&[i64::MAX, i64::MIN])),
                ("steps", ints(&[i64::MAX, i64::MIN])),
            ],
            &[1, 1],
            &[3.],
        ),
        case(
            "slice empty",
            "Slice",
            vec![f(&[5], &[1., 2., 3., 4., 5.])],
            vec![("starts", ints(&[3])), ("ends", ints(&[1]))],
            &[0],
            &[],
        ),
        case(
            "gather axis 0",
            "Gather",
            vec![f(&[3, 2], &M6), t(DType::I64, &[2], &[2., 0.])],
            vec![],
            &[2, 2],
            &[5., 6., 1., 2.],
        ),
        case(
            "gather negative index",
            "Gather",
            vec![f(&[3, 2], &M6), t(DType::I32, &[], &[-1.])],
            vec![],
            &[2],
            &[5., 6.],
        ),
        case(
            "gather axis 1, 2-D indices",
            "Gather",
            vec![f(&[3, 2], &M6), t(DType::I64, &[1, 1], &[1.])],
            vec![("axis", int(1))],
            &[3, 1, 1],
            &[2., 4., 6.],
        ),
        // --- GatherElements (ONNX's examples)
        case(
            "gather_elements axis 1",
            "GatherElements",
            vec![
                f(&[2, 2], &[1., 2., 3., 4.]),
                t(DType::I64, &[2, 2], &[0., 0., 1., 0.]),
            ],
            vec![("axis", int(1))],
            &[2, 2],
            &[1., 1., 4., 3.],
        ),
        case(
            "gather_elements axis 0, negative indices, fewer rows",
            "GatherElements",
            vec![
                f(&[3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]),
                t(DType::I64, &[2, 3], &[-1., -2., 0., -2., 0., 0.]),
            ],
            vec![],
            &[2, 3],
            &[7., 5., 3., 4., 2., 3.],
        ),
        // --- ScatterND
        case(
            "scatter_nd: one new position written into a KV cache [B=1, S=4, D=2]",
            "ScatterND",
            vec![
                f(&[1, 4, 2], &[0.; 8]),
                t(DType::I64, &[1, 1, 2], &[0., 2.]),
                f(&[1, 1, 2], &[7., 8.]),
            ],
            vec![],
            &[1, 4, 2],
            &[0., 0., 0., 0., 7., 8., 0., 0.],
        ),
        case(
            "scatter_nd add: duplicate indices accumulate",
            "ScatterND",
            vec![
                f(&[4], &[1., 2., 3., 4.]),
                t(DType::I64, &[2, 1], &[1., 1.]),
                f(&[2], &[10., 5.]),
            ],
            vec![("reduction", string("add"))],
            &[4],
            &[1., 17., 3., 4.],
        ),
        // --- Einsum
        case(
            "einsum matmul",
            "Einsum",
            vec![f(&[2, 3], &M6), f(&[3, 2], &M6)],
            vec![("equation", string("ij,jk->ik"))],
            &[2, 2],
            &[22., 28., 49., 64.],
        ),
        case(
            "einsum implicit output (matmul)",
            "Einsum",
            vec![f(&[2, 3], &M6), f(&[3, 2], &M6)],
            vec![("equation", string("ij, jk"))],
            &[2, 2],
            &[22., 28., 49., 64.],
        ),
        case(
            "einsum batched, second operand transposed (attention scores)",
            "Einsum",
            vec![f(&[1, 2, 3], &M6), f(&[1, 2, 3], &M6)],
            vec![("equation", string("bij,bkj->bik"))],
            &[1, 2, 2],
            &[14., 32., 32., 77.],
        ),
        case(
            "einsum transpose",
            "Einsum",
            vec![f(&[2, 3], &M6)],
            vec![("equation", string("ij->ji"))],
            &[3, 2],
            &[1., 4., 2., 5., 3., 6.],
        ),
        case(
            "einsum reduction over a label",
            "Einsum",
            vec![f(&[2, 3], &M6)],
            vec![("equation", string("ij->i"))],
            &[2],
            &[6., 15.],
        ),
        case(
            "einsum diagonal",
            "Einsum",
            vec![f(&[2, 2], &[1., 2., 3., 4.])],
            vec![("equation", string("ii->i"))],
            &[2],
            &[1., 4.],
        ),
        case(
            "einsum ellipsis broadcasting a vector",
            "Einsum",
            vec![f(&[2, 3], &M6), f(&[3], &[1., 0., 2.])],
            vec![("equation", string("...j,j->..."))],
            &[2],
            &[7., 16.],
        ),
        case(
            "einsum sum of everything",
            "Einsum",
            vec![f(&[2, 3], &M6)],
            vec![("equation", string("ij->"))],
            &[],
            &[21.],
        ),
        case(
            "expand",
            "Expand",
            vec![f(&[3, 1], &[1., 2., 3.])],
            vec![("shape", ints(&[3, 2]))],
            &[3, 2],
            &[1., 1., 2., 2., 3., 3.],
        ),
        case(
            "expand bidirectional",
            "Expand",
            vec![f(&[3, 1], &[1., 2., 3.])],
            vec![("shape", ints(&[2, 1, 1]))],
            &[2, 3, 1],
            &[1., 2., 3., 1., 2., 3.],
        ),
        case(
            "cumsum",
            "CumSum",
            vec![f(&[3], &[1., 2., 3.])],
            vec![],
            &[3],
            &[1., 3., 6.],
        ),
        case(
            "cumsum exclusive",
            "CumSum",
            vec![f(&[3], &[1., 2., 3.])],
            vec![("exclusive", int(1))],
            &[3],
            &[0., 1., 3.],
        ),
        case(
            "cumsum reverse",
            "CumSum",
            vec![f(&[3], &[1., 2., 3.])],
            vec![("reverse", int(1))],
            &[3],
            &[6., 5., 3.],
        ),
        case(
            "cumsum reverse exclusive",
            "CumSum",
            vec![f(&[3], &[1., 2., 3.])],
            vec![("reverse", int(1)), ("exclusive", int(1))],
            &[3],
            &[5., 3., 0.],
        ),
        case(
            "cumsum axis 1",
            "CumSum",
            vec![f(&[2, 3], &M6)],
            vec![("axis", int(1))],
            &[2, 3],
            &[1., 3., 6., 4., 9., 15.],
        ),
        case(
            "trilu upper",
            "Trilu",
            vec![f(&[3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.])],
            vec![],
            &[3, 3],
            &[1., 2., 3., 0., 5., 6., 0., 0., 9.],
        ),
        case(
            "trilu lower",
            "Trilu",
            vec![f(&[3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.])],
            vec![("upper", int(0))],
            &[3, 3],
            &[1., 0., 0., 4., 5., 0., 7., 8., 9.],
        ),
        case(
            "trilu upper k=1 batched",
            "Trilu",
            vec![f(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.])],
            vec![("k", int(1))],
            &[2, 2, 2],
            &[0., 2., 0., 0., 0., 6., 0., 0.],
        ),
        case(
            "trilu lower k=-1",
            "Trilu",
            vec![f(&[2, 3], &M6)],
            vec![("upper", int(0)), ("k", int(-1))],
            &[2, 3],
            &[0., 0., 0., 4., 0., 0.],
        ),
        // --- Conv (1-D)
        case(
            "conv depthwise, left pad 1, bias",
            "Conv",
            vec![
                f(&[1, 2, 4], &[1., 2., 3., 4., 5., 6., 7., 8.]),
                f(&[2, 1, 2], &[1., 1., 2., -1.]),
                f(&[2], &[0., 10.]),
            ],
            vec![("group", int(2)), ("pads", ints(&[1, 0]))],
            &[1, 2, 4],
            &[1., 3., 5., 7., 5., 14., 15., 16.],
        ),
        case(
            "conv stride 2",
            "Conv",
            vec![
                f(&[1, 1, 5], &[1., 2., 3., 4., 5.]),
                f(&[1, 1, 3], &[1., 0., -1.]),
            ],
            vec![("strides", ints(&[2]))],
            &[1, 1, 2],
            &[-2., -2.],
        ),
        case(
            "conv dilation 2, two output channels",
            "Conv",
            vec![
                f(&[1, 1, 5], &[1., 2., 3., 4., 5.]),
                f(&[2, 1, 2], &[1., 1., 1., -1.]),
            ],
            vec![("dilations", ints(&[2]))],
            &[1, 2, 3],
            &[4., 6., 8., -2., -2., -2.],
        ),
        // --- pooling (X [N, C, D1, ...]; "P" marks a padding position in the comments)
        case(
            "maxpool 1-D pads 1 stride 2: [P 1 5] [5 2 4] [4 3 P]",
            "MaxPool",
            vec![f(&[1, 1, 5], &[1., 5., 2., 4., 3.])],
            vec![
                ("kernel_shape", ints(&[3])),
                ("pads", ints(&[1, 1])),
                ("strides", ints(&[2])),
            ],
            &[1, 1, 3],
            &[5., 5., 4.],
        ),
        case(
            "maxpool 2-D 2x2 stride 1",
            "MaxPool",
            vec![f(&[1, 1, 3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.])],
            vec![("kernel_shape", ints(&[2, 2]))],
            &[1, 1, 2, 2],
            &[5., 6., 8., 9.],
        ),
        case(
            "maxpool 1-D dilation 2 over two channels",
            "MaxPool",
            vec![f(
                &[1, 2, 5],
                &[3., 1., 4., 1., 5., -1., -2., -3., -4., -5.],
            )],
            vec![("kernel_shape", ints(&[2])), ("dilations", ints(&[2]))],
            &[1, 2, 3],
            &[4., 1., 5., -1., -2., -3.],
        ),
        case(
            "maxpool ceil_mode keeps a last window that starts inside the input",
            "MaxPool",
            vec![f(&[1, 1, 5], &[1., 2., 3., 4., 5.])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("strides", ints(&[2])),
                ("ceil_mode", int(1)),
            ],
            &[1, 1, 3],
            &[2., 4., 5.],
        ),
        case(
            "maxpool ceil_mode drops a last window that would start in the end padding",
            "MaxPool",
            vec![f(&[1, 1, 4], &[1., 2., 3., 4.])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("strides", ints(&[2])),
                ("pads", ints(&[0, 1])),
                ("ceil_mode", int(1)),
            ],
            &[1, 1, 2],
            &[2., 4.],
        ),
        case(
            "maxpool SAME_UPPER pads the odd position after",
            "MaxPool",
            vec![f(&[1, 1, 4], &[1., 3., 2., 5.])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("auto_pad", string("SAME_UPPER")),
            ],
            &[1, 1, 4],
            &[3., 3., 5., 5.],
        ),
        case(
            "maxpool SAME_LOWER pads the odd position before",
            "MaxPool",
            vec![f(&[1, 1, 4], &[1., 3., 2., 5.])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("auto_pad", string("SAME_LOWER")),
            ],
            &[1, 1, 4],
            &[1., 3., 3., 5.],
        ),
        case(
            "maxpool VALID stride 2",
            "MaxPool",
            vec![f(&[1, 1, 6], &[1., 2., 3., 4., 5., 6.])],
            vec![
                ("kernel_shape", ints(&[3])),
                ("strides", ints(&[2])),
                ("auto_pad", string("VALID")),
            ],
            &[1, 1, 2],
            &[3., 5.],
        ),
        case(
            "maxpool 3-D",
            "MaxPool",
            vec![f(&[1, 1, 2, 2, 2], &[1., 2., 8., 4., 5., 6., 7., 3.])],
            vec![("kernel_shape", ints(&[2, 2, 2]))],
            &[1, 1, 1, 1, 1],
            &[8.],
        ),
        case(
            "averagepool pads 1: padding not counted",
            "AveragePool",
            vec![f(&[1, 1, 4], &[1., 2., 3., 4.])],
            vec![("kernel_shape", ints(&[3])), ("pads", ints(&[1, 1]))],
            &[1, 1, 4],
            &[1.5, 2., 3., 3.5],
        ),
        case(
            "averagepool pads 1, count_include_pad: padding counted",
            "AveragePool",
            vec![f(&[1, 1, 4], &[1., 2., 3., 4.])],
            vec![
                ("kernel_shape", ints(&[3])),
                ("pads", ints(&[1, 1])),
                ("count_include_pad", int(1)),
            ],
            &[1, 1, 4],
            &[1., 2., 3., 7. / 3.],
        ),
        case(
            "averagepool ceil_mode: a tap past the end padding never counts",
            "AveragePool",
            vec![f(&[1, 1, 5], &[1., 2., 3., 4., 5.])],
            vec![
                ("kernel_shape", ints(&[3])),
                ("strides", ints(&[2])),
                ("pads", ints(&[0, 1])),
                ("ceil_mode", int(1)),
                ("count_include_pad", int(1)),
            ],
            &[1, 1, 3],
            &[2., 4., 2.5],
        ),
        case(
            "averagepool ceil_mode without count_include_pad",
            "AveragePool",
            vec![f(&[1, 1, 5], &[1., 2., 3., 4., 5.])],
            vec![
                ("kernel_shape", ints(&[3])),
                ("strides", ints(&[2])),
                ("pads", ints(&[0, 1])),
                ("ceil_mode", int(1)),
            ],
            &[1, 1, 3],
            &[2., 4., 5.],
        ),
        case(
            "averagepool 2-D 2x2 stride 2",
            "AveragePool",
            vec![f(
                &[1, 1, 4, 4],
                &[
                    1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15., 16.,
                ],
            )],
            vec![("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))],
            &[1, 1, 2, 2],
            &[3.5, 5.5, 11.5, 13.5],
        ),
        case(
            "averagepool 2-D begin pads: per-position divisors",
            "AveragePool",
            vec![f(&[1, 1, 2, 2], &[1., 2., 3., 4.])],
            vec![
                ("kernel_shape", ints(&[2, 2])),
                ("pads", ints(&[1, 1, 0, 0])),
            ],
            &[1, 1, 2, 2],
            &[1., 1.5, 2., 2.5],
        ),
        case(
            "averagepool 2-D begin pads, count_include_pad",
            "AveragePool",
            vec![f(&[1, 1, 2, 2], &[1., 2., 3., 4.])],
            vec![
                ("kernel_shape", ints(&[2, 2])),
                ("pads", ints(&[1, 1, 0, 0])),
                ("count_include_pad", int(1)),
            ],
            &[1, 1, 2, 2],
            &[0.25, 0.75, 1., 2.5],
        ),
        case(
            "averagepool SAME_UPPER",
            "AveragePool",
            vec![f(&[1, 1, 4], &[1., 3., 2., 5.])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("auto_pad", string("SAME_UPPER")),
            ],
            &[1, 1, 4],
            &[2., 2.5, 3.5, 5.],
        ),
        case(
            "averagepool 3-D",
            "AveragePool",
            vec![f(&[1, 1, 2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.])],
            vec![("kernel_shape", ints(&[2, 2, 2]))],
            &[1, 1, 1, 1, 1],
            &[4.5],
        ),
        case(
            "lppool p=2 (default)",
            "LpPool",
            vec![f(&[1, 1, 3], &[3., -4., 0.])],
            vec![("kernel_shape", ints(&[2]))],
            &[1, 1, 2],
            &[5., 4.],
        ),
        case(
            "lppool p=1 sums magnitudes",
            "LpPool",
            vec![f(&[1, 1, 3], &[1., -2., 3.])],
            vec![("kernel_shape", ints(&[2])), ("p", int(1))],
            &[1, 1, 2],
            &[3., 5.],
        ),
        case(
            "lppool p=3",
            "LpPool",
            vec![f(&[1, 1, 2], &[1., -2.])],
            vec![("kernel_shape", ints(&[2])), ("p", int(3))],
            &[1, 1, 1],
            &[2.080_083_8],
        ),
        case(
            "lppool begin pad adds nothing",
            "LpPool",
            vec![f(&[1, 1, 2], &[3., -4.])],
            vec![("kernel_shape", ints(&[2])), ("pads", ints(&[1, 0]))],
            &[1, 1, 2],
            &[3., 5.],
        ),
        case(
            "globalaveragepool 1-D, two channels",
            "GlobalAveragePool",
            vec![f(&[1, 2, 2], &[1., 2., 3., 5.])],
            vec![],
            &[1, 2, 1],
            &[1.5, 4.],
        ),
        case(
            "globalmaxpool 2-D",
            "GlobalMaxPool",
            vec![f(&[1, 1, 2, 2], &[1., 7., 3., 2.])],
            vec![],
            &[1, 1, 1, 1],
            &[7.],
        ),
        case(
            "globallppool p=2 (default)",
            "GlobalLpPool",
            vec![f(&[1, 1, 2], &[3., -4.])],
            vec![],
            &[1, 1, 1],
            &[5.],
        ),
        case(
            "globallppool p=1",
            "GlobalLpPool",
            vec![f(&[1, 1, 2], &[3., -4.])],
            vec![("p", int(1))],
            &[1, 1, 1],
            &[7.],
        ),
        // --- TopK
        Case {
            what: "topk k=2 largest",
            op: "TopK",
            ins: vec![f(&[2, 3], &[1., 3., 2., 6., 4., 5.])],
            attrs: vec![("k", int(2))],
            out: vec![
                (DType::F32, vec![2, 2], vec![3., 2., 6., 5.]),
                (DType::I64, vec![2, 2], vec![1., 2., 0., 2.]),
            ],
        },
        Case {
            what: "topk k=1 smallest on axis 0, ties keep the lower index",
            op: "TopK",
            ins: vec![f(&[3, 2], &[2., 1., 1., 1., 3., 0.])],
            attrs: vec![("k", int(1)), ("axis", int(0)), ("largest", int(0))],
            out: vec![
                (DType::F32, vec![1, 2], vec![1., 0.]),
                (DType::I64, vec![1, 2], vec![1., 2.]),
            ],
        },
        // --- Attention
        case(
            "attention causal, scale 1",
            "Attention",
            vec![
                f(&[1, 1, 2, 1], &[1., 1.]),
                f(&[1, 1, 2, 1], &[0., 1.]),
                f(&[1, 1, 2, 1], &[10., 20.]),
            ],
            vec![("is_causal", int(1)), ("scale", float(1.0))],
            &[1, 1, 2, 1],
            &[10., (10. + 20. * E) / (1. + E)],
        ),
        case(
            "attention grouped-query: two query heads share one key/value head",
            "Attention",
            vec![
                f(&[1, 2, 1, 1], &[1., 2.]),
                f(&[1, 1, 2, 1], &[0., 1.]),
                f(&[1, 1, 2, 1], &[10., 20.]),
            ],
            vec![("scale", float(1.0))],
            &[1, 2, 1, 1],
            &[
                (10. + 20. * E) / (1. + E),
                (10. + 20. * E * E) / (1. + E * E),
            ],
        ),
        case(
            "attention default scale 1/sqrt(D)",
            "Attention",
            vec![
                f(&[1, 1, 1, 4], &[1., 1., 1., 1.]),
                f(&[1, 1, 2, 4], &[0., 0., 0., 0., 1., 1., 1., 1.]),
                f(&[1, 1, 2, 1], &[10., 20.]),
            ],
            vec![],
            &[1, 1, 1, 1],
            &[(10. + 20. * E * E) / (1. + E * E)],
        ),
    ]
}

#[test]
fn known_values() {
    for c in cases() {
        let got =
            run(c.op, &c.ins, &c.attrs, c.out.len()).unwrap_or_else(|e| panic!("{}: {e}", c.what));
        for (g, (dt, shape, data)) in got.iter().zip(&c.out) {
            assert_tensor(g, *dt, shape, data, c.what);
        }
    }
}

/// Every op's values are checked against something other than our evaluator: an op is
/// covered by a hand-written known-value case in [`cases`], OR by a self-contained
/// onnxruntime case, a file in `tests/graph/ops/` that uses the op and carries
/// onnxruntime's `expected` outputs (compared by `tests/reference.rs`). Both are
/// independent of the evaluator, so a new op needs only one of them. A case file without
/// expected outputs, or one onnxruntime skipped, does not count.
#[test]
fn every_supported_op_has_a_known_value_case() {
    let mut covered: BTreeSet<String> = cases().iter().map(|c| c.op.to_string()).collect();
    for (stem, text) in json_files(&repo_root().join("tests/graph/ops")) {
        let case = parse_op_case(&stem, &text);
        if case.expected.is_some_and(|e| e.get("outputs").is_some()) {
            covered.extend(case.graph.nodes.iter().map(|n| n.op.clone()));
        }
    }
    let missing: Vec<&str> = SUPPORTED_OPS
        .iter()
        .copied()
        .filter(|op| !covered.contains(*op))
        .collect();
    assert!(
        missing.is_empty(),
        "no known-value case (here) nor onnxruntime case with expected outputs \
         (tests/graph/ops/) for {missing:?}"
    );
}

/// (op, operands, attributes, output count, phrase the error must contain)
type BadCase = (
    &'static str,
    Vec<Operand>,
    Vec<(&'static str, AttrValue)>,
    usize,
    &'static str,
);

/// Cases that must be rejected by type inference, with a phrase the message must contain.
#[test]
fn inference_errors() {
    let bad: Vec<BadCase> = vec![
        (
            "SpaceToDepth",
            vec![f(&[1, 1, 3, 2], &M6)],
            vec![("blocksize", int(2))],
            1,
            "H = 3 and W = 2 must be multiples of blocksize 2",
        ),
        (
            "DepthToSpace",
            vec![f(&[1, 4, 1, 1], &[1., 2., 3., 4.])],
            vec![("blocksize", int(2)), ("mode", string("XYZ"))],
            1,
            "attribute 'mode' must be DCR or CRD",
        ),
        (
            "LpNormalization",
            vec![f(&[3], &[1., -2., 3.])],
            vec![("p", int(3))],
            1,
            "attribute 'p' must be 1 or 2, got 3",
        ),
        (
            "BatchNormalization",
            vec![
                f(&[1, 2], &[1., 2.]),
                f(&[2], &[1., 1.]),
                f(&[2], &[0., 0.]),
                f(&[2], &[0., 0.]),
                f(&[2], &[1., 1.]),
            ],
            vec![("training_mode", int(1))],
            1,
            "training mode (training_mode = 1) is not supported",
        ),
        (
            "GroupNormalization",
            vec![
                f(&[1, 4, 1], &[1., 2., 3., 4.]),
                f(&[4], &[1., 1., 1., 1.]),
                f(&[4], &[0., 0., 0., 0.]),
            ],
            vec![("num_groups", int(3))],
            1,
            "must be positive and divide the 4 channels, got 3",
        ),
        (
            "InstanceNormalization",
            vec![
                f(&[1, 2], &[1., 2.]),
                f(&[3], &[1., 1., 1.]),
                f(&[3], &[0., 0., 0.]),
            ],
            vec![],
            1,
            "rank >= 3",
        ),
        (
            "RotaryEmbedding",
            vec![
                f(&[1, 1, 1, 3], &[1., 2., 3.]),
                f(&[1, 1, 1], &[0.]),
                f(&[1, 1, 1], &[1.]),
            ],
            vec![],
            1,
            "the head size 3 is odd",
        ),
        (
            "RotaryEmbedding",
            vec![
                f(&[1, 1, 2, 4], &[1., 2., 3., 4., 5., 6., 7., 8.]),
                f(&[1, 2, 1], &[0., 1.]),
                f(&[1, 2, 1], &[1., 0.]),
            ],
            vec![],
            1,
            "caches must be [batch, seq, rotary_embedding_dim / 2] = [1, 2, 2]",
        ),
        (
            "SwiGlu",
            vec![f(&[3], &[1., -2., 3.]), f(&[2, 3], &M6)],
            vec![],
            1,
            "must have the same shape (no broadcasting)",
        ),
        (
            "PRelu",
            vec![f(&[3], &[1., -2., 3.]), f(&[2, 3], &M6)],
            vec![],
            1,
            "slope [2, 3] does not broadcast to X [3]",
        ),
        (
            "Add",
            vec![f(&[2, 3], &M6), f(&[2], &[1., 2.])],
            vec![],
            1,
            "do not broadcast",
        ),
        (
            "Add",
            vec![f(&[2], &[1., 2.]), t(DType::F16, &[2], &[1., 2.])],
            vec![],
            1,
            "one dtype",
        ),
        (
            "MatMul",
            vec![f(&[2, 3], &M6), f(&[2, 3], &M6)],
            vec![],
            1,
            "(3 vs 2)",
        ),
        (
            "MatMul",
            vec![f(&[], &[1.]), f(&[1], &[1.])],
            vec![],
            1,
            "rank >= 1",
        ),
        (
            "Gemm",
            vec![f(&[2, 3], &M6), f(&[2, 3], &M6)],
            vec![],
            1,
            "K = 3",
        ),
        (
            "Exp",
            vec![t(DType::I32, &[1], &[1.])],
            vec![],
            1,
            "floating-point",
        ),
        (
            "Softmax",
            vec![f(&[2], &[1., 2.])],
            vec![("axis", int(1))],
            1,
            "out of range",
        ),
        (
            "Reshape",
            vec![f(&[2, 3], &M6)],
            vec![("shape", ints(&[4, -1]))],
            1,
            "-1",
        ),
        (
            "Reshape",
            vec![f(&[2, 3], &M6)],
            vec![("shape", ints(&[5]))],
            1,
            "cannot reshape",
        ),
        (
            "Transpose",
            vec![f(&[2, 3], &M6)],
            vec![("perm", ints(&[0, 0]))],
            1,
            "not a permutation",
        ),
        (
            "Squeeze",
            vec![f(&[2, 3], &M6)],
            vec![("axes", ints(&[0]))],
            1,
            "cannot squeeze",
        ),
        (
            "Concat",
            vec![f(&[2, 3], &M6), f(&[3, 2], &M6)],
            vec![("axis", int(0))],
            1,
            "outside axis 0",
        ),
        (
            "Concat",
            vec![f(&[2, 3], &M6)],
            vec![],
            1,
            "needs attribute 'axis'",
        ),
        (
            "Split",
            vec![f(&[3], &[1., 2., 3.])],
            vec![],
            2,
            "does not split evenly",
        ),
        (
            "Split",
            vec![f(&[3], &[1., 2., 3.])],
            vec![("split", ints(&[1, 1]))],
            2,
            "add up to 2",
        ),
        (
            "Slice",
            vec![f(&[3], &[1., 2., 3.])],
            vec![
                ("starts", ints(&[0])),
                ("ends", ints(&[1])),
                ("steps", ints(&[0])),
            ],
            1,
            "must not be 0",
        ),
        (
            "Gather",
            vec![f(&[3], &[1., 2., 3.]), f(&[1], &[0.])],
            vec![],
            1,
            "integer indices",
        ),
        (
            "Where",
            vec![f(&[1], &[1.]), f(&[1], &[1.]), f(&[1], &[1.])],
            vec![],
            1,
            "bool condition",
        ),
        (
            "Cast",
            vec![f(&[1], &[1.])],
            vec![("to", string("f17"))],
            1,
            "not a dtype",
        ),
        (
            "Gelu",
            vec![f(&[1], &[1.])],
            vec![("approximate", string("fast"))],
            1,
            "approximate",
        ),
        (
            "Trilu",
            vec![f(&[3], &[1., 2., 3.])],
            vec![],
            1,
            "rank >= 2",
        ),
        (
            "Clip",
            vec![f(&[1], &[1.]), f(&[2], &[0., 0.])],
            vec![],
            1,
            "single f32 value",
        ),
        (
            "LayerNormalization",
            vec![f(&[2, 3], &M6), f(&[2], &[1., 1.])],
            vec![],
            1,
            "normalised shape",
        ),
        (
            "Expand",
            vec![f(&[2], &[1., 2.])],
            vec![("shape", ints(&[3]))],
            1,
            "do not broadcast",
        ),
        (
            "CumSum",
            vec![f(&[2], &[1., 2.])],
            vec![("exclusive", int(2))],
            1,
            "0 or 1",
        ),
        (
            "Relu",
            vec![f(&[2], &[1., 2.])],
            vec![("alpha", float(1.))],
            1,
            "no attribute 'alpha'",
        ),
        (
            "Softmax",
            vec![f(&[2], &[1., 2.])],
            vec![("axis", float(1.))],
            1,
            "must be an integer",
        ),
        (
            "Add",
            vec![f(&[2], &[1., 2.])],
            vec![],
            1,
            "takes 2 input(s), got 1",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![],
            1,
            "'kernel_shape' is required",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2, 2]))],
            1,
            "one value per spatial axis (1)",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[0]))],
            1,
            "'kernel_shape' must be >= 1",
        ),
        (
            "AveragePool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("pads", ints(&[-1, 0]))],
            1,
            "'pads' must be >= 0",
        ),
        (
            "AveragePool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("pads", ints(&[1]))],
            1,
            "'pads' must list 2 values",
        ),
        (
            "AveragePool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("pads", ints(&[2, 0]))],
            1,
            "smaller than the window's span 2",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 2], &[0.; 2])],
            vec![("kernel_shape", ints(&[4])), ("pads", ints(&[1, 0]))],
            1,
            "the padded input has only 3",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[1 << 21]))],
            1,
            "taps",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("auto_pad", string("SAME"))],
            1,
            "'auto_pad' must be NOTSET",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![
                ("kernel_shape", ints(&[2])),
                ("auto_pad", string("VALID")),
                ("pads", ints(&[1, 1])),
            ],
            1,
            "cannot be given with auto_pad VALID",
        ),
        (
            "MaxPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("ceil_mode", int(2))],
            1,
            "must be 0 or 1",
        ),
        (
            "LpPool",
            vec![f(&[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2])), ("p", int(0))],
            1,
            "'p' must be an integer from 1",
        ),
        (
            "MaxPool",
            vec![f(&[1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2]))],
            1,
            "at least one spatial axis",
        ),
        (
            "AveragePool",
            vec![t(DType::I32, &[1, 1, 4], &[0.; 4])],
            vec![("kernel_shape", ints(&[2]))],
            1,
            "floating-point",
        ),
        (
            "GlobalMaxPool",
            vec![f(&[2, 2], &[0.; 4])],
            vec![],
            1,
            "at least one spatial axis",
        ),
        (
            "Neg",
            vec![f(&[2], &[1., 2.])],
            vec![],
            2,
            "produces 1 output(s), got 2",
        ),
    ];
    for (op, ins, attrs, n_out, phrase) in bad {
        let g = one_node(op, &ins, &attrs, n_out);
        let e = g.infer_types().expect_err(op);
        assert_eq!(
            e.location,
            graph::Location::Node {
                node: "n".into(),
                op: op.into()
            },
            "{op}: {e}"
        );
        assert!(
            e.message.contains(phrase),
            "{op}: message {:?} lacks {phrase:?}",
            e.message
        );
    }
}

#[test]
fn gather_index_out_of_range_is_an_error() {
    let e = run(
        "Gather",
        &[f(&[3], &[1., 2., 3.]), t(DType::I64, &[1], &[3.])],
        &[],
        1,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("node 'n' (Gather): "), "{e}");
    assert!(e.message.contains("out of range"), "{e}");
}

#[test]
fn outputs_are_rounded_to_their_dtype() {
    // 1 + 2^-12 is not an f16: the Add's f16 output rounds back to 1.
    let got = run(
        "Add",
        &[
            t(DType::F16, &[1], &[1.0]),
            t(DType::F16, &[1], &[0.000_244_140_62]),
        ],
        &[],
        1,
    )
    .unwrap();
    assert_tensor(&got[0], DType::F16, &[1], &[1.0], "f16 add");
    // bf16 matmul accumulates in f32 (3.0078125, exact), then rounds once: a tie, to even 3.0
    let got = run(
        "MatMul",
        &[
            t(DType::BF16, &[1, 3], &[1., 1., 1.]),
            t(DType::BF16, &[3, 1], &[1.0078125, 1.0, 1.0]),
        ],
        &[],
        1,
    )
    .unwrap();
    assert_tensor(&got[0], DType::BF16, &[1, 1], &[3.0], "bf16 matmul");
    // int Add saturates at the i8 range.
    let got = run(
        "Add",
        &[t(DType::I8, &[1], &[100.]), t(DType::I8, &[1], &[100.])],
        &[],
        1,
    )
    .unwrap();
    assert_tensor(&got[0], DType::I8, &[1], &[127.], "i8 add");
}
