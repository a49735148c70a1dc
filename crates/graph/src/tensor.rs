//! Tensor types and tensors.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;

/// Most elements one materialised tensor (one holding values) may have (2^28, i.e. 1 GiB
/// of `f32`); see docs/limits.md.
pub const MAX_TENSOR_ELEMENTS: usize = 1 << 28;
/// Most elements all values of one graph may have together when they are materialised,
/// as the reference evaluator does (2^29). A graph's shapes may add up to more: timing-only
/// runs hold shapes, never values. See docs/limits.md.
pub const MAX_GRAPH_ELEMENTS: usize = 1 << 29;
/// Most elements a tensor's shape may describe (2^31): shapes only, for planning and
/// timing a full model (the Llama-3.1-8B logits at sequence 8192 are 2^30), small enough
/// that its bytes fit a 32-bit `usize` in f16 and are far from overflowing in any dtype
/// on 64-bit machines.
pub const MAX_SHAPE_ELEMENTS: usize = 1 << 31;
/// Highest rank a tensor may have.
pub const MAX_RANK: usize = 16;

/// Element type and shape of a tensor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<usize>) -> Self {
        TensorType { dtype, shape }
    }

    /// Number of elements (product of the shape; 1 for a scalar). Saturates at
    /// `usize::MAX` instead of overflowing, so an absurd shape reads as "too big".
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Bytes the tensor occupies in its dtype (saturating).
    pub fn size_bytes(&self) -> usize {
        self.numel().saturating_mul(self.dtype.size_bytes())
    }

    /// Checks the size limits of a materialised tensor ([`MAX_TENSOR_ELEMENTS`],
    /// [`MAX_RANK`]).
    pub fn check_size(&self) -> Result<(), String> {
        check_shape(&self.shape)
    }

    /// Checks the size limits of a shape that need not be materialised
    /// ([`MAX_SHAPE_ELEMENTS`], [`MAX_RANK`]).
    pub fn check_shape_size(&self) -> Result<(), String> {
        check_shape_limit(&self.shape, MAX_SHAPE_ELEMENTS, "2^31")
    }
}

impl std::fmt::Display for TensorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{:?}", self.dtype, self.shape)
    }
}

/// Saturating product of a shape.
pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |a, &d| a.saturating_mul(d))
}

pub(crate) fn check_shape(shape: &[usize]) -> Result<(), String> {
    check_shape_limit(shape, MAX_TENSOR_ELEMENTS, "2^28")
}

fn check_shape_limit(shape: &[usize], limit: usize, limit_name: &str) -> Result<(), String> {
    if shape.len() > MAX_RANK {
        return Err(format!(
            "shape {shape:?} has rank {}, more than the limit of {MAX_RANK}",
            shape.len()
        ));
    }
    let n = numel(shape);
    if n > limit {
        let shown = if n == usize::MAX {
            "more than 2^64".to_string()
        } else {
            n.to_string()
        };
        return Err(format!(
            "shape {shape:?} has {shown} elements, more than the limit of {limit} ({limit_name}) per tensor"
        ));
    }
    Ok(())
}

/// A tensor: dtype, shape and row-major data. The values are already rounded to the
/// dtype (see [`DType::round`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Tensor {
    /// Makes a tensor, checking the size limits and that `data` has one value per element;
    /// the values are rounded to `dtype`.
    pub fn new(dtype: DType, shape: Vec<usize>, mut data: Vec<f32>) -> Result<Tensor, String> {
        check_shape(&shape)?;
        let n = numel(&shape);
        if data.len() != n {
            return Err(format!(
                "a {dtype}{shape:?} tensor needs {n} values, got {}",
                data.len()
            ));
        }
        if dtype != DType::F32 {
            for v in &mut data {
                *v = dtype.round(*v);
            }
        }
        Ok(Tensor { dtype, shape, data })
    }

    /// A tensor of the given type filled with `value` (rounded to the dtype).
    pub fn full(ty: &TensorType, value: f32) -> Result<Tensor, String> {
        check_shape(&ty.shape)?;
        Ok(Tensor {
            dtype: ty.dtype,
            shape: ty.shape.clone(),
            data: vec![ty.dtype.round(value); ty.numel()],
        })
    }

    /// A rank-0 tensor.
    pub fn scalar(dtype: DType, value: f32) -> Tensor {
        Tensor {
            dtype,
            shape: Vec::new(),
            data: vec![dtype.round(value)],
        }
    }

    /// The tensor's type.
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, self.shape.clone())
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
}
