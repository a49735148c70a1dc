//! The SuperDSC ("SDSC") data model: the stage-one IR of the Spyre toolchain.
//!
//! One [`SuperDsc`] describes one device op over all the cores it uses, through affine or
//! tabulated "folds" over core, corelet, row and time. A [`Bundle`] is a fused kernel: the
//! descriptors in execution order plus a manifest of the tensors they touch and where those
//! tensors live.
//!
//! Field names follow the public format (`numCoresUsed_`, `coreIdToWkSlice_`, ...) through
//! `#[serde(rename)]`, so a bundle written here reads like the backend's own files. Maps whose
//! order matters (per-core tables, per-dimension tables) are [`OrderedMap`]s: JSON objects whose
//! key order is preserved on read and write, so output is deterministic and diff-friendly.
//!
//! This crate knows nothing about graphs or KTIR; it is data plus JSON read/write.

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// Format tag written into every bundle manifest.
pub const BUNDLE_FORMAT: &str = "spyre-sdsc-bundle";
/// Manifest version understood by this crate.
pub const BUNDLE_VERSION: u32 = 1;

/// A JSON object whose keys keep their order (core ids in numeric order, dims in iteration order).
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> OrderedMap<V> {
    pub fn new() -> Self {
        OrderedMap(Vec::new())
    }
    pub fn insert(&mut self, key: impl Into<String>, value: V) {
        let key = key.into();
        if let Some(slot) = self.0.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            self.0.push((key, value));
        }
    }
    /// Appends an entry whose key is known to be new (one per core, counted up), without
    /// the search [`OrderedMap::insert`] makes: filling a map of every core that way is
    /// quadratic in the cores.
    pub fn push_new(&mut self, key: impl Into<String>, value: V) {
        let key = key.into();
        debug_assert!(self.get(&key).is_none(), "key {key} is already in the map");
        self.0.push((key, value));
    }
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl<V> FromIterator<(String, V)> for OrderedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut m = OrderedMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V_<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

/// A single-entry object `{ name: value }`, the public format's way of naming a descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub value: T,
}

impl<T: Serialize> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(&self.name, &self.value)?;
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = OrderedMap::<T>::deserialize(d)?;
        let mut it = m.0.into_iter();
        match (it.next(), it.next()) {
            (Some((name, value)), None) => Ok(Named { name, value }),
            _ => Err(de::Error::custom(
                "expected an object with exactly one entry { name: descriptor }",
            )),
        }
    }
}

/// Per-dimension sizes, written as `{"name_": "n", "mb_": 128, "out_": 130}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DimSizes {
    pub name: String,
    /// (dim label without the trailing underscore, size) in iteration order.
    pub dims: Vec<(String, u64)>,
}

impl DimSizes {
    pub fn get(&self, label: &str) -> Option<u64> {
        self.dims.iter().find(|(l, _)| l == label).map(|(_, v)| *v)
    }
}

impl Serialize for DimSizes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.dims.len() + 1))?;
        map.serialize_entry("name_", &self.name)?;
        for (l, v) in &self.dims {
            map.serialize_entry(&format!("{l}_"), v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DimSizes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis;
        impl<'de> Visitor<'de> for Vis {
            type Value = DimSizes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object {\"name_\": string, \"<dim>_\": integer, ...}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<DimSizes, A::Error> {
                let mut out = DimSizes::default();
                while let Some(k) = a.next_key::<String>()? {
                    if k == "name_" {
                        out.name = a.next_value()?;
                    } else {
                        let label = k.strip_suffix('_').ok_or_else(|| {
                            de::Error::custom(format!("dim key '{k}' must end with '_'"))
                        })?;
                        out.dims.push((label.to_string(), a.next_value()?));
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Vis)
    }
}

/// `{"factor_": 32, "label_": "core"}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldProperty {
    #[serde(rename = "factor_")]
    pub factor: u64,
    #[serde(rename = "label_")]
    pub label: String,
}

impl FoldProperty {
    pub fn new(factor: u64, label: &str) -> Self {
        FoldProperty {
            factor,
            label: label.to_string(),
        }
    }
}

/// How one fold maps its index to a coordinate: `alpha * i + beta`, a table (`Map`, values in
/// the fold's `data_`), or a constant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FoldFunc {
    Affine {
        #[serde(rename = "alpha_")]
        alpha: i64,
        #[serde(rename = "beta_")]
        beta: i64,
    },
    Map {},
    Const {},
}

/// A fold manager: one function and one property per fold, plus tabulated data for `Map` folds
/// keyed by the fold index vector, e.g. `"[3, 0, 0]": "4096"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Folds {
    pub dim_prop_func: Vec<FoldFunc>,
    pub dim_prop_attr: Vec<FoldProperty>,
    #[serde(
        rename = "data_",
        default,
        skip_serializing_if = "OrderedMap::is_empty"
    )]
    pub data: OrderedMap<String>,
}

/// Per-core work sizes of one data stage: `ss_` (slice size) and `el_` (element loop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataStage {
    #[serde(rename = "ss_")]
    pub ss: DimSizes,
    #[serde(rename = "el_")]
    pub el: DimSizes,
}

/// Layout of a primary data structure (INPUT, KERNEL, OUTPUT).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrimaryDs {
    #[serde(rename = "layoutDimOrder_")]
    pub layout_dim_order: Vec<String>,
    #[serde(rename = "stickDimOrder_")]
    pub stick_dim_order: Vec<String>,
    #[serde(rename = "stickSize_")]
    pub stick_size: Vec<u64>,
}

/// Coordinates of one dim of an allocated tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoordInfo {
    pub spatial: u32,
    pub temporal: u32,
    #[serde(rename = "elemArr")]
    pub elem_arr: u32,
    pub padding: String,
    pub folds: Folds,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Coordinates {
    #[serde(rename = "coordInfo")]
    pub coord_info: OrderedMap<CoordInfo>,
    #[serde(rename = "coreIdToWkSlice_", default)]
    pub core_id_to_wk_slice: OrderedMap<OrderedMap<u64>>,
}

/// One node of the schedule tree. We emit only `allocate` nodes (one per tensor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleNode {
    #[serde(rename = "nodeType_")]
    pub node_type: String,
    #[serde(rename = "name_")]
    pub name: String,
    #[serde(rename = "prev_")]
    pub prev: String,
    #[serde(rename = "ldsIdx_")]
    pub lds_idx: u32,
    /// "hbm" (device DRAM) or "lx" (scratchpad).
    #[serde(rename = "component_")]
    pub component: String,
    #[serde(rename = "layoutDimOrder_")]
    pub layout_dim_order: Vec<String>,
    #[serde(rename = "maxDimSizes_")]
    pub max_dim_sizes: Vec<i64>,
    /// Start address per (core, corelet, time).
    #[serde(rename = "startAddressCoreCorelet_")]
    pub start_address_core_corelet: Folds,
    #[serde(rename = "coordinates_")]
    pub coordinates: Coordinates,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsPresent {
    #[serde(rename = "isPresent")]
    pub is_present: u8,
}

/// A tensor as the op sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabeledDs {
    #[serde(rename = "ldsIdx_")]
    pub lds_idx: u32,
    #[serde(rename = "dsName_")]
    pub ds_name: String,
    /// INPUT, KERNEL or OUTPUT.
    #[serde(rename = "dsType_")]
    pub ds_type: String,
    /// Per iteration dim: 1 when the tensor is indexed by the dim, -1 when reduced or broadcast.
    #[serde(rename = "scale_")]
    pub scale: Vec<i64>,
    #[serde(rename = "wordLength")]
    pub word_length: u32,
    #[serde(rename = "dataFormat_")]
    pub data_format: String,
    #[serde(rename = "memOrg_")]
    pub mem_org: OrderedMap<IsPresent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeAttributes {
    #[serde(rename = "dataFormat_")]
    pub data_format: String,
    #[serde(rename = "fidelity_")]
    pub fidelity: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeOp {
    /// "pt" (systolic array, matmul) or "sfp" (vector unit).
    #[serde(rename = "exUnit")]
    pub ex_unit: String,
    #[serde(rename = "opFuncName")]
    pub op_func_name: String,
    #[serde(rename = "attributes_")]
    pub attributes: ComputeAttributes,
    pub location: String,
    #[serde(rename = "inputLabeledDs")]
    pub input_labeled_ds: Vec<String>,
    #[serde(rename = "outputLabeledDs")]
    pub output_labeled_ds: Vec<String>,
}

/// The per-op design-space config (one per SuperDsc in what we emit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dsc {
    #[serde(rename = "numCoresUsed_")]
    pub num_cores_used: u64,
    #[serde(rename = "numCoreletsUsed_")]
    pub num_corelets_used: u64,
    #[serde(rename = "coreIdsUsed_")]
    pub core_ids_used: Vec<u64>,
    /// Full iteration extents, in elements.
    #[serde(rename = "N_")]
    pub n: DimSizes,
    /// Per-core sizes, keyed by stage ("0").
    #[serde(rename = "dataStageParam_")]
    pub data_stage_param: OrderedMap<DataStage>,
    #[serde(rename = "primaryDsInfo_")]
    pub primary_ds_info: OrderedMap<PrimaryDs>,
    #[serde(rename = "scheduleTree_")]
    pub schedule_tree: Vec<ScheduleNode>,
    #[serde(rename = "labeledDs_")]
    pub labeled_ds: Vec<LabeledDs>,
    #[serde(rename = "computeOp_")]
    pub compute_op: Vec<ComputeOp>,
}

/// One op over all its cores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuperDsc {
    #[serde(rename = "coreFoldProp_")]
    pub core_fold_prop: FoldProperty,
    #[serde(rename = "coreletFoldProp_")]
    pub corelet_fold_prop: FoldProperty,
    #[serde(rename = "numCoresUsed_")]
    pub num_cores_used: u64,
    #[serde(rename = "coreIdToDsc_")]
    pub core_id_to_dsc: OrderedMap<u64>,
    /// Splits per iteration dim, in iteration order.
    #[serde(rename = "numWkSlicesPerDim_")]
    pub num_wk_slices_per_dim: OrderedMap<u64>,
    /// Core id -> slice index per dim.
    #[serde(rename = "coreIdToWkSlice_")]
    pub core_id_to_wk_slice: OrderedMap<OrderedMap<u64>>,
    #[serde(rename = "dscs_")]
    pub dscs: Vec<Named<Dsc>>,
}

/// Where a bundle tensor lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleTensor {
    pub name: String,
    pub dtype: String,
    #[serde(rename = "hostShape")]
    pub host_shape: Vec<u64>,
    #[serde(rename = "deviceSize")]
    pub device_size: Vec<u64>,
    #[serde(rename = "deviceBytes")]
    pub device_bytes: u64,
    /// "input", "initializer", "output" or "intermediate".
    pub role: String,
    /// "hbm" or "lx".
    pub component: String,
    /// Byte offset in device DRAM, or in every core's scratchpad.
    pub offset: u64,
    /// Scratchpad bytes per core (lx only).
    #[serde(
        rename = "bytesPerCore",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub bytes_per_core: Option<u64>,
}

/// A fused kernel: descriptors in execution order plus the tensor manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub format: String,
    pub version: u32,
    pub name: String,
    /// Op names in execution order (the keys of `sdscs`).
    pub ops: Vec<String>,
    pub tensors: Vec<BundleTensor>,
    pub sdscs: Vec<Named<SuperDsc>>,
}

/// A bundle that failed to read.
#[derive(Debug, Clone, PartialEq)]
pub struct SdscError {
    pub message: String,
}

impl fmt::Display for SdscError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SdscError {}

impl Bundle {
    pub fn new(name: &str) -> Bundle {
        Bundle {
            format: BUNDLE_FORMAT.to_string(),
            version: BUNDLE_VERSION,
            name: name.to_string(),
            ops: Vec::new(),
            tensors: Vec::new(),
            sdscs: Vec::new(),
        }
    }

    pub fn tensor(&self, name: &str) -> Option<&BundleTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn sdsc(&self, op: &str) -> Option<&SuperDsc> {
        self.sdscs.iter().find(|s| s.name == op).map(|s| &s.value)
    }

    /// Pretty JSON (2-space indent), deterministic.
    pub fn to_json_pretty(&self) -> String {
        // Serialising plain data into a String cannot fail; fall back to an empty object anyway.
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string())
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Read a bundle and check it is self-consistent (format tag, op list matches descriptors,
    /// every tensor a descriptor names is in the manifest).
    pub fn from_json(text: &str) -> Result<Bundle, SdscError> {
        let b: Bundle = serde_json::from_str(text).map_err(|e| SdscError {
            message: format!("invalid SDSC bundle JSON: {e}"),
        })?;
        b.validate()?;
        Ok(b)
    }

    pub fn validate(&self) -> Result<(), SdscError> {
        let err = |m: String| Err(SdscError { message: m });
        if self.format != BUNDLE_FORMAT {
            return err(format!(
                "format is '{}', expected '{BUNDLE_FORMAT}'",
                self.format
            ));
        }
        if self.version != BUNDLE_VERSION {
            return err(format!(
                "version {} is not supported (expected {BUNDLE_VERSION})",
                self.version
            ));
        }
        let names: Vec<&str> = self.sdscs.iter().map(|s| s.name.as_str()).collect();
        let ops: Vec<&str> = self.ops.iter().map(|s| s.as_str()).collect();
        if names != ops {
            return err(format!(
                "op order {ops:?} does not match the descriptors {names:?}"
            ));
        }
        for s in &self.sdscs {
            for d in &s.value.dscs {
                for lds in &d.value.labeled_ds {
                    if self.tensor(&lds.ds_name).is_none() {
                        return err(format!(
                            "op '{}': tensor '{}' is not in the bundle manifest",
                            s.name, lds.ds_name
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// File name of op `i`'s descriptor in a bundle directory.
    pub fn op_file_name(i: usize, op: &str) -> String {
        format!("sdsc_{i}_{}.json", op.replace(['/', ' '], "_"))
    }

    /// The files of a bundle directory: `bundle.json` (the whole bundle, which
    /// [`Bundle::from_json`] reads back), `bundle.mlir` (runs the descriptors in order) and one
    /// descriptor file per op.
    pub fn files(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("bundle.json".to_string(), self.to_json_pretty()),
            ("bundle.mlir".to_string(), self.bundle_mlir()),
        ];
        for (i, s) in self.sdscs.iter().enumerate() {
            let text = serde_json::to_string_pretty(&s.value).unwrap_or_else(|_| "{}".into());
            out.push((Self::op_file_name(i, &s.name), text));
        }
        out
    }

    /// The small MLIR driver that runs the descriptors in order.
    pub fn bundle_mlir(&self) -> String {
        let mut s = format!(
            "// bundle {}\nmodule {{\n  func.func @sdsc_bundle() {{\n",
            self.name
        );
        for (i, op) in self.ops.iter().enumerate() {
            s.push_str(&format!(
                "    sdsc.execute \"{}\" // {op}\n",
                Self::op_file_name(i, op)
            ));
        }
        s.push_str("    return\n  }\n}\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bundle {
        let mut b = Bundle::new("demo");
        b.ops.push("mm".into());
        b.tensors.push(BundleTensor {
            name: "A".into(),
            dtype: "f16".into(),
            host_shape: vec![4, 64],
            device_size: vec![1, 4, 64],
            device_bytes: 512,
            role: "input".into(),
            component: "hbm".into(),
            offset: 0,
            bytes_per_core: None,
        });
        let mut ss = DimSizes {
            name: "core".into(),
            dims: vec![("mb".into(), 2)],
        };
        let n = DimSizes {
            name: "n".into(),
            dims: vec![("mb".into(), 4)],
        };
        ss.dims.push(("out".into(), 64));
        let mut stage = OrderedMap::new();
        stage.insert(
            "0",
            DataStage {
                ss: ss.clone(),
                el: ss,
            },
        );
        let mut data = OrderedMap::new();
        data.insert("[0, 0, 0]", "0".to_string());
        data.insert("[1, 0, 0]", "256".to_string());
        let mut slices = OrderedMap::new();
        for c in 0..2u64 {
            let mut m = OrderedMap::new();
            m.insert("mb", c);
            slices.insert(c.to_string(), m);
        }
        let dsc = Dsc {
            num_cores_used: 2,
            num_corelets_used: 1,
            core_ids_used: vec![0, 1],
            n,
            data_stage_param: stage,
            primary_ds_info: [(
                "OUTPUT".to_string(),
                PrimaryDs {
                    layout_dim_order: vec!["out".into(), "mb".into()],
                    stick_dim_order: vec!["out".into()],
                    stick_size: vec![64],
                },
            )]
            .into_iter()
            .collect(),
            schedule_tree: vec![ScheduleNode {
                node_type: "allocate".into(),
                name: "allocate-A_hbm".into(),
                prev: String::new(),
                lds_idx: 0,
                component: "hbm".into(),
                layout_dim_order: vec!["out".into(), "mb".into()],
                max_dim_sizes: vec![1, 4],
                start_address_core_corelet: Folds {
                    dim_prop_func: vec![FoldFunc::Map {}, FoldFunc::Const {}, FoldFunc::Const {}],
                    dim_prop_attr: vec![
                        FoldProperty::new(2, "core"),
                        FoldProperty::new(1, "corelet"),
                        FoldProperty::new(1, "time"),
                    ],
                    data,
                },
                coordinates: Coordinates::default(),
            }],
            labeled_ds: vec![LabeledDs {
                lds_idx: 0,
                ds_name: "A".into(),
                ds_type: "INPUT".into(),
                scale: vec![1],
                word_length: 2,
                data_format: "SEN169_FP16".into(),
                mem_org: [("hbm".to_string(), IsPresent { is_present: 1 })]
                    .into_iter()
                    .collect(),
            }],
            compute_op: vec![ComputeOp {
                ex_unit: "sfp".into(),
                op_func_name: "exp".into(),
                attributes: ComputeAttributes {
                    data_format: "SEN169_FP16".into(),
                    fidelity: "regular".into(),
                },
                location: "Inner".into(),
                input_labeled_ds: vec!["A-idx0".into()],
                output_labeled_ds: vec![],
            }],
        };
        b.sdscs.push(Named {
            name: "mm".into(),
            value: SuperDsc {
                core_fold_prop: FoldProperty::new(2, "core"),
                corelet_fold_prop: FoldProperty::new(1, "corelet"),
                num_cores_used: 2,
                core_id_to_dsc: [("0".to_string(), 0), ("1".to_string(), 0)]
                    .into_iter()
                    .collect(),
                num_wk_slices_per_dim: [("mb".to_string(), 2)].into_iter().collect(),
                core_id_to_wk_slice: slices,
                dscs: vec![Named {
                    name: "exp".into(),
                    value: dsc,
                }],
            },
        });
        b
    }

    #[test]
    fn bundle_round_trips_through_json() {
        let b = sample();
        let text = b.to_json_pretty();
        let back = Bundle::from_json(&text).expect("reads back");
        assert_eq!(back, b);
        assert_eq!(back.to_json_pretty(), text);
    }

    #[test]
    fn public_field_names_and_shapes() {
        let v = sample().to_value();
        let s = &v["sdscs"][0]["mm"];
        assert_eq!(s["numCoresUsed_"], 2);
        assert_eq!(s["coreFoldProp_"]["factor_"], 2);
        assert_eq!(s["numWkSlicesPerDim_"]["mb"], 2);
        assert_eq!(s["coreIdToWkSlice_"]["1"]["mb"], 1);
        let d = &s["dscs_"][0]["exp"];
        assert_eq!(d["N_"]["name_"], "n");
        assert_eq!(d["N_"]["mb_"], 4);
        assert_eq!(d["dataStageParam_"]["0"]["ss_"]["out_"], 64);
        assert_eq!(d["primaryDsInfo_"]["OUTPUT"]["stickSize_"][0], 64);
        let alloc = &d["scheduleTree_"][0];
        assert_eq!(alloc["component_"], "hbm");
        assert_eq!(
            alloc["startAddressCoreCorelet_"]["dim_prop_func"][0],
            serde_json::json!({"Map": {}})
        );
        assert_eq!(
            alloc["startAddressCoreCorelet_"]["data_"]["[1, 0, 0]"],
            "256"
        );
        assert_eq!(d["labeledDs_"][0]["memOrg_"]["hbm"]["isPresent"], 1);
        assert_eq!(d["computeOp_"][0]["exUnit"], "sfp");
        let affine = serde_json::to_value(FoldFunc::Affine { alpha: 3, beta: 0 }).unwrap();
        assert_eq!(
            affine,
            serde_json::json!({"Affine": {"alpha_": 3, "beta_": 0}})
        );
    }

    #[test]
    fn ordered_maps_keep_numeric_core_order() {
        let mut m = OrderedMap::new();
        for c in [0u64, 1, 2, 10, 11] {
            m.insert(c.to_string(), c);
        }
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(text, r#"{"0":0,"1":1,"2":2,"10":10,"11":11}"#);
        let back: OrderedMap<u64> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn bad_bundles_are_errors_not_panics() {
        assert!(Bundle::from_json("").is_err());
        assert!(Bundle::from_json("[1,2]").is_err());
        let mut b = sample();
        b.ops = vec!["other".into()];
        let e = Bundle::from_json(&b.to_json_pretty()).unwrap_err();
        assert!(e.message.contains("does not match"), "{e}");
        let mut b = sample();
        b.tensors.clear();
        let e = Bundle::from_json(&b.to_json_pretty()).unwrap_err();
        assert!(e.message.contains("not in the bundle manifest"), "{e}");
        let mut b = sample();
        b.format = "x".into();
        assert!(Bundle::from_json(&b.to_json_pretty()).is_err());
        let e = serde_json::from_str::<Named<u32>>(r#"{"a":1,"b":2}"#).unwrap_err();
        assert!(e.to_string().contains("exactly one"));
        assert!(serde_json::from_str::<DimSizes>(r#"{"name_":"n","mb":3}"#).is_err());
    }

    #[test]
    fn bundle_mlir_lists_ops_in_order() {
        let mut b = sample();
        b.ops.push("add/x".into());
        let m = b.bundle_mlir();
        let a = m.find("sdsc_0_mm").unwrap();
        let c = m.find("sdsc_1_add_x").unwrap();
        assert!(a < c);
    }
}
