//! The `sdsc` pass: one SuperDSC descriptor per device op plus the bundle manifest.
//!
//! Conventions of what we emit (the public format leaves them to the backend):
//! - `layoutDimOrder_` lists the iteration labels of a tensor's device dims, outermost first,
//!   without the within-stick dim (its label is `stickDimOrder_`); a tensor dim no iteration
//!   dim indexes (broadcast) is labelled `bcast<host dim>`.
//! - `startAddressCoreCorelet_` tabulates (`Map`) each core's byte address of its slice origin:
//!   DRAM base + device offset of the slice origin, or the scratchpad offset.
//! - each coordinate's core fold is a `Map` (slice start per core), since mixed-radix slice
//!   indices are not affine in the core id; the element fold is affine with step 1.
//! - `scale_` has one entry per iteration dim: 1 when the tensor is indexed by it, -1 when it
//!   is reduced away or broadcast.

use crate::layout::Layout;
use crate::ops::{access_map, dsize, DeviceOp};
use crate::scratchpad::Placement;
use crate::workdiv::{chunk_elems, op_eps, WorkDivision};
use crate::{Compilation, CompileError};
use graph::DType;
use sdsc::{
    Bundle, BundleTensor, ComputeAttributes, ComputeOp, CoordInfo, Coordinates, DataStage,
    DimSizes, Dsc, FoldFunc, FoldProperty, Folds, IsPresent, LabeledDs, Named, OrderedMap,
    PrimaryDs, ScheduleNode, SuperDsc,
};

/// The public format's data-format name for a dtype.
pub fn data_format(dt: DType) -> &'static str {
    match dt {
        DType::F16 => "SEN169_FP16",
        DType::F32 => "IEEE_FP32",
        DType::BF16 => "BF16",
        DType::F8E4M3 => "FP8_E4M3",
        DType::F8E5M2 => "FP8_E5M2",
        DType::I64 => "INT64",
        DType::I32 => "INT32",
        DType::I8 => "INT8",
        DType::Bool => "BOOL",
    }
}

fn dim_label(op: &DeviceOp, acc: &[Option<usize>], h: Option<usize>) -> String {
    match h {
        None => "synthetic".to_string(),
        Some(h) => match acc.get(h).copied().flatten() {
            Some(d) => op.iteration[d].label.clone(),
            None => format!("bcast{h}"),
        },
    }
}

/// Host index of the origin of a core's slice of a tensor.
fn slice_origin(
    acc: &[Option<usize>],
    slice: &[usize],
    chunks: &[usize],
    shape: &[usize],
) -> Vec<usize> {
    acc.iter()
        .enumerate()
        .map(|(h, a)| match a {
            Some(d) => (slice[*d] * chunks[*d]).min(shape[h].saturating_sub(1)),
            None => 0,
        })
        .collect()
}

fn placement_of<'a>(c: &'a Compilation, t: &str, at: &str) -> Result<&'a Placement, CompileError> {
    c.placements
        .get(t)
        .ok_or_else(|| CompileError::at(at, format!("tensor '{t}' has no placement")))
}

fn tensor_role(op: &DeviceOp, i: usize) -> &'static str {
    if i >= op.inputs.len() {
        "OUTPUT"
    } else if op.kind.is_matmul() && i == 1 {
        "KERNEL"
    } else {
        "INPUT"
    }
}

fn emit_op(c: &Compilation, op: &DeviceOp, div: &WorkDivision) -> Result<SuperDsc, CompileError> {
    let eps = op_eps(c, op);
    let chunks = chunk_elems(op, eps, &div.splits);
    let cores = div.cores_used as u64;
    let labels: Vec<&str> = op.iteration.iter().map(|d| d.label.as_str()).collect();
    let core_key = |k: usize| k.to_string();
    let n = DimSizes {
        name: "n".into(),
        dims: op
            .iteration
            .iter()
            .map(|d| (d.label.clone(), d.extent as u64))
            .collect(),
    };
    let per_core = DimSizes {
        name: "core".into(),
        dims: op
            .iteration
            .iter()
            .zip(&chunks)
            .map(|(d, &ch)| (d.label.clone(), ch.min(d.extent) as u64))
            .collect(),
    };
    let mut stage = OrderedMap::new();
    stage.insert(
        "0",
        DataStage {
            ss: per_core.clone(),
            el: per_core,
        },
    );
    let mut primary = OrderedMap::new();
    let mut tree = Vec::new();
    let mut lds = Vec::new();
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for (i, t) in op.inputs.iter().chain(&op.outputs).enumerate() {
        let l: &Layout = c.layout(t, &op.name)?;
        let acc = access_map(op, i, &l.host_shape);
        let nd = l.device_size.len();
        let role = tensor_role(op, i);
        let order: Vec<String> = (0..nd.saturating_sub(1))
            .map(|j| dim_label(op, &acc, l.host_dim_of_device_dim.get(j).copied().flatten()))
            .collect();
        let stick_label = dim_label(op, &acc, l.stick_host_dim());
        if primary.get(role).is_none() {
            primary.insert(
                role,
                PrimaryDs {
                    layout_dim_order: order.clone(),
                    stick_dim_order: vec![stick_label],
                    stick_size: vec![l.elems_per_stick as u64],
                },
            );
        }
        let place = placement_of(c, t, &op.name)?;
        let (component, in_lx) = match place {
            Placement::Dram { .. } => ("hbm", false),
            Placement::Scratchpad { .. } => ("lx", true),
        };
        let mut addr = OrderedMap::new();
        let mut coord_starts: Vec<OrderedMap<String>> =
            vec![OrderedMap::new(); nd.saturating_sub(1)];
        for (core, slice) in div.core_to_slice.iter().enumerate() {
            let origin = slice_origin(&acc, slice, &chunks, &l.host_shape);
            let a = match place {
                Placement::Dram { offset } => {
                    offset
                        + (l.device_offset_of(&origin) as u64).saturating_mul(dsize(l.dtype) as u64)
                }
                Placement::Scratchpad { offset, .. } => *offset,
            };
            addr.push_new(format!("[{core}, 0, 0]"), a.to_string());
            let di = l.device_index_of(&origin);
            for (j, m) in coord_starts.iter_mut().enumerate() {
                m.push_new(core_key(core), di[j].to_string());
            }
        }
        let mut coord = OrderedMap::new();
        for (j, starts) in coord_starts.into_iter().enumerate() {
            let mut key = order[j].clone();
            if coord.get(&key).is_some() {
                key = format!("{key}{j}");
            }
            let h = l.host_dim_of_device_dim.get(j).copied().flatten();
            let per_core_extent = h
                .and_then(|h| acc.get(h).copied().flatten())
                .map(|d| l.device_size[j].div_ceil(div.splits[d].max(1)))
                .unwrap_or(l.device_size[j]);
            let host_extent = h.map(|h| l.host_shape[h]).unwrap_or(1);
            let padded = if l.is_stick_count_dim(j) {
                host_extent % l.elems_per_stick.max(1) != 0
            } else {
                l.device_size[j] != host_extent
            };
            coord.insert(
                key,
                CoordInfo {
                    spatial: 3,
                    temporal: 0,
                    elem_arr: if l.is_stick_count_dim(j) { 2 } else { 1 },
                    padding: if padded { "pad".into() } else { "nopad".into() },
                    folds: Folds {
                        dim_prop_func: vec![
                            FoldFunc::Map {},
                            FoldFunc::Affine { alpha: 0, beta: 0 },
                            FoldFunc::Affine { alpha: 0, beta: 0 },
                            FoldFunc::Affine { alpha: 1, beta: 0 },
                        ],
                        dim_prop_attr: vec![
                            FoldProperty::new(cores, "core_fold"),
                            FoldProperty::new(1, "corelet_fold"),
                            FoldProperty::new(1, "row_fold"),
                            FoldProperty::new(per_core_extent as u64, "elem_arr_0"),
                        ],
                        data: starts,
                    },
                },
            );
        }
        tree.push(ScheduleNode {
            node_type: "allocate".into(),
            name: format!("allocate-{t}_{component}"),
            prev: String::new(),
            lds_idx: i as u32,
            component: component.into(),
            layout_dim_order: order,
            max_dim_sizes: l.device_size[..nd.saturating_sub(1)]
                .iter()
                .map(|&x| x as i64)
                .collect(),
            start_address_core_corelet: Folds {
                dim_prop_func: vec![FoldFunc::Map {}, FoldFunc::Const {}, FoldFunc::Const {}],
                dim_prop_attr: vec![
                    FoldProperty::new(cores, "core"),
                    FoldProperty::new(1, "corelet"),
                    FoldProperty::new(1, "time"),
                ],
                data: addr,
            },
            coordinates: Coordinates {
                coord_info: coord,
                core_id_to_wk_slice: OrderedMap::new(),
            },
        });
        let mut mem = OrderedMap::new();
        mem.insert("hbm", IsPresent { is_present: 1 });
        mem.insert(
            "lx",
            IsPresent {
                is_present: u8::from(in_lx),
            },
        );
        let used: Vec<usize> = acc.iter().flatten().copied().collect();
        lds.push(LabeledDs {
            lds_idx: i as u32,
            ds_name: t.clone(),
            ds_type: role.into(),
            scale: (0..op.iteration.len())
                .map(|d| if used.contains(&d) { 1 } else { -1 })
                .collect(),
            word_length: dsize(l.dtype) as u32,
            data_format: data_format(l.dtype).into(),
            mem_org: mem,
        });
        let tag = format!("{t}-idx{i}");
        if i < op.inputs.len() {
            ins.push(tag);
        } else {
            outs.push(tag);
        }
    }
    // The device dtype, as the labeled data sets say it.
    let out_dt = op
        .outputs
        .first()
        .and_then(|o| c.layouts.get(o))
        .map(|l| l.dtype)
        .unwrap_or(DType::F16);
    let dsc = Dsc {
        num_cores_used: cores,
        num_corelets_used: 1,
        core_ids_used: (0..cores).collect(),
        n,
        data_stage_param: stage,
        primary_ds_info: primary,
        schedule_tree: tree,
        labeled_ds: lds,
        compute_op: vec![ComputeOp {
            ex_unit: if op.kind.is_matmul() {
                "pt".into()
            } else {
                "sfp".into()
            },
            op_func_name: op.kind.name().to_string(),
            attributes: ComputeAttributes {
                data_format: data_format(out_dt).into(),
                fidelity: "regular".into(),
            },
            location: "Inner".into(),
            input_labeled_ds: ins,
            output_labeled_ds: outs,
        }],
    };
    let mut slices = OrderedMap::new();
    for (core, sl) in div.core_to_slice.iter().enumerate() {
        let m: OrderedMap<u64> = labels
            .iter()
            .zip(sl)
            .map(|(l, &x)| (l.to_string(), x as u64))
            .collect();
        slices.push_new(core_key(core), m);
    }
    Ok(SuperDsc {
        core_fold_prop: FoldProperty::new(cores, "core"),
        corelet_fold_prop: FoldProperty::new(1, "corelet"),
        num_cores_used: cores,
        core_id_to_dsc: (0..div.cores_used).map(|k| (core_key(k), 0)).collect(),
        num_wk_slices_per_dim: labels
            .iter()
            .zip(&div.splits)
            .map(|(l, &s)| (l.to_string(), s as u64))
            .collect(),
        core_id_to_wk_slice: slices,
        dscs: vec![Named {
            name: op.kind.name().to_string(),
            value: dsc,
        }],
    })
}

/// The `sdsc` pass: fills `c.sdsc`.
pub fn run(c: &mut Compilation) -> Result<(), CompileError> {
    let mut b = Bundle::new(&c.graph.name);
    for (i, op) in c.ops.iter().enumerate() {
        // A view's reshape copies nothing, so it has no descriptor.
        if c.is_view_op(i) {
            continue;
        }
        let div = c
            .divisions
            .get(i)
            .ok_or_else(|| CompileError::at(&op.name, "no work division for this op"))?;
        b.ops.push(op.name.clone());
        b.sdscs.push(Named {
            name: op.name.clone(),
            value: emit_op(c, op, div)?,
        });
    }
    let roles = c.interface_roles();
    for (t, l) in &c.layouts {
        let (component, offset, bpc) = match placement_of(c, t, t)? {
            Placement::Dram { offset } => ("hbm", *offset, None),
            Placement::Scratchpad {
                offset,
                bytes_per_core,
            } => ("lx", *offset, Some(*bytes_per_core)),
        };
        b.tensors.push(BundleTensor {
            name: t.clone(),
            dtype: l.dtype.name().into(),
            host_shape: l.host_shape.iter().map(|&x| x as u64).collect(),
            device_size: l.device_size.iter().map(|&x| x as u64).collect(),
            device_bytes: l.device_bytes,
            role: roles
                .get(t.as_str())
                .copied()
                .unwrap_or("intermediate")
                .into(),
            component: component.into(),
            offset,
            bytes_per_core: bpc,
        });
    }
    b.validate().map_err(|e| {
        CompileError::new(format!("emitted SDSC bundle is inconsistent: {e}"), None)
    })?;
    c.sdsc = Some(b);
    Ok(())
}
