//! The user's own tensors for a graph run: files (`.npy`, or serialized ONNX
//! `TensorProto`s as in an ONNX `test_data_set_N` directory) bound to the graph's inputs
//! or outputs, checked against their types, and outputs handed back as `.npy` bytes.
//!
//! Binding rules: a `.npy` file is named after its tensor (`x.npy` fills `x`); a `.pb`
//! file is matched by the name inside its `TensorProto`, or else by position (`input_2.pb`
//! is the third graph input, `output_0.pb` the first output; other names count in file-name
//! order). One directory may hold both inputs and expected outputs: binding inputs skips
//! `output_*.pb` and `.npy` files named after an output, and binding outputs the reverse.

use crate::{npy, DriverError, Stage};
use graph::{did_you_mean, Graph, Tensor, TensorType, MAX_TENSOR_ELEMENTS};
use std::collections::BTreeMap;

/// Which of the graph's tensors files are bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The graph's inputs (`spyre run --inputs`).
    Inputs,
    /// The graph's outputs, as the values the user expects (`spyre run --expected`).
    Outputs,
}

impl Role {
    fn word(self) -> &'static str {
        match self {
            Role::Inputs => "input",
            Role::Outputs => "output",
        }
    }
    fn pb_prefix(self) -> &'static str {
        match self {
            Role::Inputs => "input_",
            Role::Outputs => "output_",
        }
    }
}

fn err(m: String) -> DriverError {
    DriverError::new(Stage::Load, m)
}

/// The graph's tensors of `role`, with their types, in order.
fn targets(graph: &Graph, role: Role) -> Result<Vec<(String, TensorType)>, DriverError> {
    match role {
        Role::Inputs => Ok(graph
            .inputs
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone()))
            .collect()),
        Role::Outputs => {
            let types = graph
                .infer_types()
                .map_err(|e| DriverError::from_graph("", e, Stage::Load))?;
            graph
                .outputs
                .iter()
                .map(|o| {
                    let ty = types
                        .get(o)
                        .cloned()
                        .ok_or_else(|| err(format!("output '{o}' has no inferred type")))?;
                    Ok((o.clone(), ty))
                })
                .collect()
        }
    }
}

/// The position `K` in a file name `input_K.pb` / `output_K.pb`.
fn position(file: &str, prefix: &str) -> Option<usize> {
    file.strip_prefix(prefix)?.strip_suffix(".pb")?.parse().ok()
}

/// Binds `files` (file name, contents) to the graph's inputs or outputs. Every tensor of
/// `role` must get exactly one file of its dtype and shape; a file that names no such
/// tensor is an error (suggesting the closest name). Files of other kinds (neither `.npy`
/// nor `.pb`) are ignored. The values are rounded to the tensor's dtype.
pub fn bind(
    graph: &Graph,
    files: &[(String, Vec<u8>)],
    role: Role,
) -> Result<BTreeMap<String, Tensor>, DriverError> {
    bind_files(graph, files, role, true)
}

/// [`bind`] where tensors may go without a file: the page fills some inputs and leaves the
/// rest seeded random, and compares only the outputs the user gave values for.
pub fn bind_some(
    graph: &Graph,
    files: &[(String, Vec<u8>)],
    role: Role,
) -> Result<BTreeMap<String, Tensor>, DriverError> {
    bind_files(graph, files, role, false)
}

fn bind_files(
    graph: &Graph,
    files: &[(String, Vec<u8>)],
    role: Role,
    every: bool,
) -> Result<BTreeMap<String, Tensor>, DriverError> {
    let wanted = targets(graph, role)?;
    let other = match role {
        Role::Inputs => Role::Outputs,
        Role::Outputs => Role::Inputs,
    };
    let other_names: Vec<String> = match other {
        Role::Inputs => graph.inputs.iter().map(|v| v.name.clone()).collect(),
        Role::Outputs => graph.outputs.clone(),
    };
    let names: Vec<&str> = wanted.iter().map(|(n, _)| n.as_str()).collect();
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut bound: BTreeMap<String, (String, Tensor)> = BTreeMap::new();
    let mut unnamed_pb = 0usize;
    for (file, bytes) in sorted {
        let (name, tensor, from_npy) = if let Some(stem) = file.strip_suffix(".npy") {
            if !names.contains(&stem) && other_names.iter().any(|n| n == stem) {
                continue;
            }
            let a =
                npy::read(bytes, MAX_TENSOR_ELEMENTS).map_err(|m| err(format!("{file}: {m}")))?;
            let Some((_, ty)) = wanted.iter().find(|(n, _)| n == stem) else {
                return Err(unknown(file, stem, &names, role));
            };
            if !npy::holds(&a.dtype, ty.dtype) {
                return Err(err(format!(
                    "{} '{stem}' is {ty}; {file} holds numpy dtype {} (save it as {})",
                    role.word(),
                    a.dtype,
                    numpy_name(ty.dtype)
                )));
            }
            let t =
                Tensor::new(ty.dtype, a.shape, a.data).map_err(|m| err(format!("{file}: {m}")))?;
            (stem.to_string(), t, true)
        } else if file.ends_with(".pb") {
            if file.starts_with(other.pb_prefix()) {
                continue;
            }
            let (pb_name, t) = graph::load_tensor_proto(bytes)
                .map_err(|e| err(format!("{file}: {}", e.message)))?;
            let name = if names.contains(&pb_name.as_str()) {
                pb_name
            } else {
                let k = match position(file, role.pb_prefix()) {
                    Some(k) => k,
                    None if pb_name.is_empty() => {
                        unnamed_pb += 1;
                        unnamed_pb - 1
                    }
                    None => return Err(unknown(file, &pb_name, &names, role)),
                };
                match names.get(k) {
                    Some(n) => n.to_string(),
                    None => {
                        return Err(err(format!(
                        "{file}: the graph has {} {}s, so there is no {} {k} (counting from 0){}",
                        names.len(),
                        role.word(),
                        role.word(),
                        if pb_name.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; the tensor inside is called '{pb_name}'{}",
                                did_you_mean(&pb_name, &names)
                            )
                        }
                    )))
                    }
                }
            };
            (name, t, false)
        } else {
            continue;
        };
        let Some((_, ty)) = wanted.iter().find(|(n, _)| *n == name) else {
            return Err(unknown(file, &name, &names, role));
        };
        if !from_npy && tensor.dtype != ty.dtype {
            return Err(err(format!(
                "{} '{name}' is {ty}; {file} holds {}",
                role.word(),
                tensor.ty()
            )));
        }
        if tensor.shape != ty.shape {
            return Err(err(format!(
                "{} '{name}' has shape {:?}; {file} holds shape {:?}",
                role.word(),
                ty.shape,
                tensor.shape
            )));
        }
        if let Some((first, _)) = bound.get(&name) {
            return Err(err(format!(
                "{} '{name}' is given twice: by {first} and by {file}",
                role.word()
            )));
        }
        bound.insert(name, (file.clone(), tensor));
    }
    let missing: Vec<String> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| !bound.contains_key(**n))
        .map(|(k, n)| format!("'{n}' ({n}.npy or {}{k}.pb)", role.pb_prefix()))
        .collect();
    if every && !missing.is_empty() {
        return Err(err(format!(
            "no value for {} {}",
            role.word(),
            missing.join(", ")
        )));
    }
    Ok(bound.into_iter().map(|(n, (_, t))| (n, t)).collect())
}

fn unknown(file: &str, name: &str, names: &[&str], role: Role) -> DriverError {
    err(format!(
        "{file}: the graph has no {} named '{name}'{}; its {}s are: {}",
        role.word(),
        did_you_mean(name, names),
        role.word(),
        names.join(", ")
    ))
}

/// How to write an array of `dtype` from numpy, for messages.
fn numpy_name(dtype: graph::DType) -> &'static str {
    use graph::DType;
    match dtype {
        DType::F16 => "float16",
        DType::I64 => "int64",
        DType::I32 => "int32",
        DType::I8 => "int8",
        DType::Bool => "bool",
        DType::F32 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => "float32",
    }
}
