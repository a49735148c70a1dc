//! Dtype rounding and deterministic initializers/inputs.

mod common;

use graph::{load_json, random_inputs, DType, SplitMix64};

#[test]
fn dtype_names_round_trip() {
    for d in DType::ALL {
        assert_eq!(DType::parse(d.name()), Some(d));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            format!("\"{}\"", d.name())
        );
        assert_eq!(
            serde_json::from_str::<DType>(&format!("\"{}\"", d.name())).unwrap(),
            d
        );
    }
    assert_eq!(DType::parse("float16"), None);
    let sizes: Vec<usize> = DType::ALL.iter().map(|d| d.size_bytes()).collect();
    assert_eq!(sizes, [4, 2, 2, 1, 1, 8, 4, 1, 1]);
    assert!(DType::F8E5M2.is_float() && !DType::I8.is_float() && !DType::Bool.is_float());
}

#[test]
fn rounding_table() {
    let third = 1.0f32 / 3.0;
    // (dtype, input, expected)
    let table: &[(DType, f32, f32)] = &[
        (DType::F32, third, third),
        (DType::F16, third, 0.333_251_95),
        (DType::F16, 65504.0, 65504.0),
        (DType::F16, 65520.0, f32::INFINITY),
        (DType::F16, 1e-8, 0.0),
        (DType::BF16, third, 0.333_984_38),
        (DType::BF16, 1.0 + 1.0 / 256.0, 1.0), // tie to even
        (DType::BF16, 3e38, 3.004_055_3e38),
        // fp8 e4m3 (FN): 3 mantissa bits, max 448, saturating
        (DType::F8E4M3, third, 0.343_75),
        (DType::F8E4M3, 448.0, 448.0),
        (DType::F8E4M3, 464.0, 448.0),
        (DType::F8E4M3, 1e6, 448.0),
        (DType::F8E4M3, -1e6, -448.0),
        (DType::F8E4M3, f32::NEG_INFINITY, -448.0),
        (DType::F8E4M3, 17.0, 16.0), // tie 16|18 -> even mantissa 16
        (DType::F8E4M3, 19.0, 20.0), // tie 18|20 -> 20
        (DType::F8E4M3, 0.001_953_125, 0.001_953_125), // smallest subnormal 2^-9
        (DType::F8E4M3, 0.000_9, 0.0),
        // fp8 e5m2: 2 mantissa bits, max 57344, saturating
        (DType::F8E5M2, third, 0.312_5),
        (DType::F8E5M2, 57344.0, 57344.0),
        (DType::F8E5M2, 1e6, 57344.0),
        (DType::F8E5M2, 1.125, 1.0),                   // tie -> even
        (DType::F8E5M2, 1.375, 1.5),                   // tie -> even
        (DType::F8E5M2, 1.0 / 65536.0, 1.0 / 65536.0), // 2^-16, smallest subnormal
        // ints: truncate toward zero, saturate
        (DType::I32, 2.9, 2.0),
        (DType::I32, -2.9, -2.0),
        (DType::I8, 300.0, 127.0),
        (DType::I8, -300.0, -128.0),
        (DType::I8, f32::NAN, 0.0),
        (DType::I64, -1e30, -9.223_372e18),
        // bool
        (DType::Bool, 0.0, 0.0),
        (DType::Bool, -0.5, 1.0),
        (DType::Bool, f32::NAN, 1.0),
    ];
    for &(d, x, e) in table {
        let r = d.round(x);
        assert!(r == e, "{d}.round({x}) = {r}, expected {e}");
        assert_eq!(d.round(r), r, "{d} rounding is idempotent at {x}");
    }
    assert!(DType::F16.round(f32::NAN).is_nan());
    assert!(DType::F8E4M3.round(f32::NAN).is_nan());
    assert_eq!(DType::F8E4M3.round(-0.0).to_bits(), (-0.0f32).to_bits());
}

#[test]
fn fp8_grids_are_exactly_the_representable_values() {
    // Every representable positive e4m3 value: subnormals m*2^-9 (m=1..7), then (8+m)*2^(e-10).
    let mut grid = vec![0.0f64];
    grid.extend((1..8).map(|m| f64::from(m) * 2f64.powi(-9)));
    for e in 1..=15 {
        for m in 0..8 {
            let v = f64::from(8 + m) * 2f64.powi(e - 10);
            if v <= 448.0 {
                grid.push(v);
            }
        }
    }
    assert_eq!(grid.len(), 127); // 0 plus 126 positive finite values
    for w in grid.windows(2) {
        let (lo, hi) = (w[0] as f32, w[1] as f32);
        assert_eq!(DType::F8E4M3.round(lo), lo);
        assert_eq!(DType::F8E4M3.round(hi), hi);
        let mid = ((w[0] + w[1]) / 2.0) as f32;
        assert!(DType::F8E4M3.round(mid) == lo || DType::F8E4M3.round(mid) == hi);
        assert_eq!(DType::F8E4M3.round(lo + (hi - lo) * 0.25), lo);
        assert_eq!(DType::F8E4M3.round(lo + (hi - lo) * 0.75), hi);
    }
}

#[test]
fn splitmix_and_initializers_are_pinned() {
    let mut r = SplitMix64::new(1);
    let first: Vec<u64> = (0..2).map(|_| r.next_u64()).collect();
    assert_eq!(first, [0x910A_2DEC_8902_5CC1, 0xBEEB_8DA1_658E_EC67]);

    let g = load_json(include_str!("../../../examples/graphs/matmul_add.json")).unwrap();
    let a = g.initializer_tensors().unwrap();
    let b = g.initializer_tensors().unwrap();
    assert_eq!(a, b, "same seed, same numbers");
    let bw = &a["B"].data;
    assert_eq!(bw.len(), 13000);
    // pinned: uniform(-0.5, 0.5), seed 1, f16 (see rng module docs for the transform)
    let expect_b = [PIN_B0, PIN_B1, PIN_B2];
    assert_eq!(
        &bw[..3],
        &expect_b,
        "first values of B changed: {:?}",
        &bw[..3]
    );
    assert!(bw.iter().all(|v| (-0.5..=0.5).contains(v)));
    assert!(bw.iter().all(|&v| DType::F16.round(v) == v));
    let mean = bw.iter().sum::<f32>() / bw.len() as f32;
    assert!(mean.abs() < 0.02, "mean {mean}");
    // different seeds give different numbers
    assert_ne!(&a["bias"].data[..3], &bw[..3]);
}

// Pinned values, checked against an independent Python implementation of the same
// SplitMix64 + transform.
const PIN_B0: f32 = 0.066_589_355;
const PIN_B1: f32 = 0.245_727_54;
const PIN_B2: f32 = 0.470_947_27;

#[test]
fn normal_init_is_pinned_and_plausible() {
    let text = r#"{ "format": "spyre-graph", "version": 1, "name": "n",
      "initializers": [ { "name": "w", "dtype": "f32", "shape": [20000], "init": { "normal": { "seed": 42, "mean": 1.0, "std": 2.0 } } } ],
      "outputs": ["w"] }"#;
    let g = load_json(text).unwrap();
    let w = &g.initializer_tensors().unwrap()["w"].data;
    assert_eq!(
        &w[..3],
        &[PIN_N0, PIN_N1, PIN_N2],
        "first values changed: {:?}",
        &w[..3]
    );
    let n = w.len() as f64;
    let mean = w.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = w
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    assert!((mean - 1.0).abs() < 0.05, "mean {mean}");
    assert!((var.sqrt() - 2.0).abs() < 0.05, "std {}", var.sqrt());
}

const PIN_N0: f32 = 1.985_901_4;
const PIN_N1: f32 = -0.388_011_34;
const PIN_N2: f32 = -1.562_154_7;

#[test]
fn random_inputs_are_deterministic_and_rounded() {
    let g = load_json(include_str!("../../../examples/graphs/matmul_add.json")).unwrap();
    let a = random_inputs(&g, 3).unwrap();
    assert_eq!(a, random_inputs(&g, 3).unwrap());
    assert_ne!(a, random_inputs(&g, 4).unwrap());
    let x = &a["A"];
    assert_eq!(x.shape, [128, 100]);
    assert_eq!(x.dtype, DType::F16);
    assert!(x
        .data
        .iter()
        .all(|&v| (-1.0..=1.0).contains(&v) && DType::F16.round(v) == v));
    assert_eq!(
        &x.data[..2],
        &[PIN_R0, PIN_R1],
        "first values changed: {:?}",
        &x.data[..2]
    );
}

const PIN_R0: f32 = -0.772_949_2;
const PIN_R1: f32 = 0.400_634_77;
