//! TensorProto data <-> values carried as `f32`, and the ONNX element types.

use crate::dtype::DType;
use crate::onnx::proto::{data_type as dt, TensorProto};
use crate::tensor::{check_shape, numel, TensorType};

/// Our dtype for an ONNX element type, or a message naming the type.
pub(crate) fn dtype_of(code: i32) -> Result<DType, String> {
    Ok(match code {
        dt::FLOAT => DType::F32,
        dt::FLOAT16 => DType::F16,
        dt::BFLOAT16 => DType::BF16,
        dt::FLOAT8E4M3FN => DType::F8E4M3,
        dt::FLOAT8E5M2 => DType::F8E5M2,
        dt::INT64 => DType::I64,
        dt::INT32 => DType::I32,
        dt::INT8 => DType::I8,
        dt::BOOL => DType::Bool,
        other => {
            let name = match other {
                0 => "UNDEFINED",
                dt::UINT8 => "UINT8",
                dt::UINT16 => "UINT16",
                dt::INT16 => "INT16",
                dt::STRING => "STRING",
                dt::DOUBLE => "DOUBLE",
                dt::UINT32 => "UINT32",
                dt::UINT64 => "UINT64",
                dt::COMPLEX64 => "COMPLEX64",
                dt::COMPLEX128 => "COMPLEX128",
                dt::FLOAT8E4M3FNUZ => "FLOAT8E4M3FNUZ",
                dt::FLOAT8E5M2FNUZ => "FLOAT8E5M2FNUZ",
                dt::UINT4 => "UINT4",
                dt::INT4 => "INT4",
                dt::FLOAT4E2M1 => "FLOAT4E2M1",
                _ => "an unknown type",
            };
            return Err(format!(
                "element type {other} ({name}) is not supported (supported: FLOAT, FLOAT16, BFLOAT16, FLOAT8E4M3FN, FLOAT8E5M2, INT64, INT32, INT8, BOOL)"
            ));
        }
    })
}

/// The ONNX element type of a dtype.
pub(crate) fn code_of(d: DType) -> i32 {
    match d {
        DType::F32 => dt::FLOAT,
        DType::F16 => dt::FLOAT16,
        DType::BF16 => dt::BFLOAT16,
        DType::F8E4M3 => dt::FLOAT8E4M3FN,
        DType::F8E5M2 => dt::FLOAT8E5M2,
        DType::I64 => dt::INT64,
        DType::I32 => dt::INT32,
        DType::I8 => dt::INT8,
        DType::Bool => dt::BOOL,
    }
}

/// A decoded tensor: its type, its values as f32 (rounded to the dtype) and, for integer
/// tensors, the exact integers (attribute-like inputs such as Slice's ends use these).
pub(crate) struct Decoded {
    pub ty: TensorType,
    pub values: Vec<f32>,
    pub ints: Option<Vec<i64>>,
}

/// Shape from ONNX dims, checked against the size limits.
pub(crate) fn shape_of(dims: &[i64]) -> Result<Vec<usize>, String> {
    let shape = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} is negative")))
        .collect::<Result<Vec<usize>, String>>()?;
    check_shape(&shape)?;
    Ok(shape)
}

fn count_err(what: &str, got: usize, n: usize) -> String {
    format!("{what} holds {got} values but the shape has {n} elements")
}

/// Decodes a TensorProto's data (raw_data or the typed fields).
pub(crate) fn decode(t: &TensorProto) -> Result<Decoded, String> {
    if t.data_location == 1 || !t.external_data.is_empty() {
        return Err(
            "its data is stored outside the model file (ONNX external data), which only a model's initializers may do"
                .into(),
        );
    }
    let dtype = dtype_of(t.data_type)?;
    let shape = shape_of(&t.dims)?;
    let n = numel(&shape);
    let mut ints: Option<Vec<i64>> = None;
    let values: Vec<f32> = if !t.raw_data.is_empty() {
        let d = decode_raw(&TensorType::new(dtype, shape.clone()), &t.raw_data)?;
        ints = d.ints;
        d.values
    } else {
        match dtype {
            DType::F32 => {
                if t.float_data.len() != n {
                    return Err(count_err("float_data", t.float_data.len(), n));
                }
                t.float_data.clone()
            }
            DType::I64 => {
                if t.int64_data.len() != n {
                    return Err(count_err("int64_data", t.int64_data.len(), n));
                }
                ints = Some(t.int64_data.clone());
                t.int64_data.iter().map(|&x| x as f32).collect()
            }
            _ => {
                if t.int32_data.len() != n {
                    return Err(count_err("int32_data", t.int32_data.len(), n));
                }
                let d = &t.int32_data;
                match dtype {
                    DType::F16 => d
                        .iter()
                        .map(|&x| half::f16::from_bits(x as u16).to_f32())
                        .collect(),
                    DType::BF16 => d
                        .iter()
                        .map(|&x| half::bf16::from_bits(x as u16).to_f32())
                        .collect(),
                    DType::F8E4M3 => d.iter().map(|&x| e4m3_to_f32(x as u8)).collect(),
                    DType::F8E5M2 => d.iter().map(|&x| e5m2_to_f32(x as u8)).collect(),
                    DType::Bool => d.iter().map(|&x| if x != 0 { 1.0 } else { 0.0 }).collect(),
                    _ => {
                        let v: Vec<i64> = d.iter().map(|&x| i64::from(x)).collect();
                        let f = v.iter().map(|&x| dtype.round(x as f32)).collect();
                        ints = Some(v);
                        f
                    }
                }
            }
        }
    };
    Ok(Decoded {
        ty: TensorType::new(dtype, shape),
        values,
        ints,
    })
}

/// Decodes little-endian bytes (`raw_data`, or an external file's range) of a tensor of
/// type `ty`; the byte count must match the shape.
pub(crate) fn decode_raw(ty: &TensorType, raw: &[u8]) -> Result<Decoded, String> {
    let (dtype, shape) = (ty.dtype, &ty.shape);
    let n = numel(shape);
    let mut ints: Option<Vec<i64>> = None;
    let size = dtype.size_bytes();
    if raw.len() != n.saturating_mul(size) {
        return Err(format!(
            "raw_data has {} bytes but a {dtype}{shape:?} tensor needs {}",
            raw.len(),
            n.saturating_mul(size)
        ));
    }
    let values: Vec<f32> = match dtype {
        DType::F32 => raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::F16 => raw
            .chunks_exact(2)
            .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect(),
        DType::BF16 => raw
            .chunks_exact(2)
            .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect(),
        DType::F8E4M3 => raw.iter().map(|&b| e4m3_to_f32(b)).collect(),
        DType::F8E5M2 => raw.iter().map(|&b| e5m2_to_f32(b)).collect(),
        DType::I64 => {
            let v: Vec<i64> = raw
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect();
            let f = v.iter().map(|&x| x as f32).collect();
            ints = Some(v);
            f
        }
        DType::I32 => {
            let v: Vec<i64> = raw
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect();
            let f = v.iter().map(|&x| x as f32).collect();
            ints = Some(v);
            f
        }
        DType::I8 => {
            let v: Vec<i64> = raw.iter().map(|&b| i64::from(b as i8)).collect();
            let f = v.iter().map(|&x| x as f32).collect();
            ints = Some(v);
            f
        }
        DType::Bool => raw
            .iter()
            .map(|&b| if b != 0 { 1.0 } else { 0.0 })
            .collect(),
    };
    Ok(Decoded {
        ty: ty.clone(),
        values,
        ints,
    })
}

/// A tensor whose data is in an external file (ONNX external data): its type and where
/// its bytes are.
pub(crate) struct ExternalRef {
    pub ty: TensorType,
    pub location: String,
    pub offset: u64,
    pub length: u64,
}

/// The external-data reference of `t`, if its data is external (`data_location =
/// EXTERNAL` or `external_data` entries). The location must stay inside the model's
/// directory (relative, no `..`), offset and length must be integers, and the length
/// (when given) must be the shape's byte count; nothing is read.
pub(crate) fn external_ref(t: &TensorProto) -> Result<Option<ExternalRef>, String> {
    if t.data_location != 1 && t.external_data.is_empty() {
        return Ok(None);
    }
    let dtype = dtype_of(t.data_type)?;
    let shape = shape_of(&t.dims)?;
    let bytes = numel(&shape).saturating_mul(dtype.size_bytes()) as u64;
    let (mut location, mut offset, mut length) = (None, 0u64, None);
    for e in &t.external_data {
        let int = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("external data '{}' is '{v}', not a byte count", e.key))
        };
        match e.key.as_str() {
            "location" => location = Some(e.value.clone()),
            "offset" => offset = int(&e.value)?,
            "length" => length = Some(int(&e.value)?),
            _ => {} // checksum and others: not needed to read the bytes
        }
    }
    let location = location.ok_or("its external data has no 'location'")?;
    check_location(&location)?;
    let length = length.unwrap_or(bytes);
    if length != bytes {
        return Err(format!(
            "its external data is {length} bytes but a {dtype}{shape:?} tensor takes {bytes}"
        ));
    }
    offset
        .checked_add(length)
        .ok_or("its external data offset and length overflow")?;
    Ok(Some(ExternalRef {
        ty: TensorType::new(dtype, shape),
        location,
        offset,
        length,
    }))
}

/// External data must be a file in the model's directory or below it: a relative path
/// with no `..` component, no drive or URL scheme.
pub(crate) fn check_location(location: &str) -> Result<(), String> {
    let bad = location.is_empty()
        || location.contains('\0')
        || location.starts_with(['/', '\\'])
        || location.contains(':')
        || location.split(['/', '\\']).any(|c| c == "..");
    if bad {
        return Err(format!(
            "its external data location '{location}' is not a relative path inside the model's directory"
        ));
    }
    Ok(())
}

/// Encodes values (already rounded to `dtype`) as raw little-endian bytes.
pub(crate) fn encode_raw(dtype: DType, values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len().saturating_mul(dtype.size_bytes()));
    for &v in values {
        match dtype {
            DType::F32 => out.extend_from_slice(&v.to_le_bytes()),
            DType::F16 => out.extend_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes()),
            DType::BF16 => out.extend_from_slice(&half::bf16::from_f32(v).to_bits().to_le_bytes()),
            DType::F8E4M3 => out.push(f32_to_fp8(v, 3, 7)),
            DType::F8E5M2 => out.push(f32_to_fp8(v, 2, 15)),
            DType::I64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
            DType::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            DType::I8 => out.push((v as i8) as u8),
            DType::Bool => out.push(u8::from(v != 0.0)),
        }
    }
    out
}

/// OCP E4M3FN: bias 7, no infinities, S.1111.111 is NaN.
pub(crate) fn e4m3_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 3) & 0xf);
    let m = f32::from(b & 0x7);
    if e == 0xf && b & 0x7 == 0x7 {
        return f32::NAN;
    }
    sign * if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// OCP E5M2: bias 15, IEEE-style infinities and NaNs.
pub(crate) fn e5m2_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 2) & 0x1f);
    let m = f32::from(b & 0x3);
    if e == 0x1f {
        return if b & 0x3 == 0 {
            sign * f32::INFINITY
        } else {
            f32::NAN
        };
    }
    sign * if e == 0 {
        m / 4.0 * 2f32.powi(-14)
    } else {
        (1.0 + m / 4.0) * 2f32.powi(e - 15)
    }
}

/// Bits of an fp8 value with `mant` mantissa bits and exponent `bias`; `v` is rounded to
/// the format first (saturating), so the encoding is exact.
fn f32_to_fp8(v: f32, mant: u32, bias: i32) -> u8 {
    let d = if mant == 3 {
        DType::F8E4M3
    } else {
        DType::F8E5M2
    };
    let v = d.round(v);
    if v.is_nan() {
        return 0x7f;
    }
    let sign: u8 = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = f64::from(v.abs());
    if a == 0.0 {
        return sign;
    }
    let min_normal = 2f64.powi(1 - bias);
    let scale = f64::from(1u32 << mant);
    let bits = if a < min_normal {
        // subnormal: a = m / 2^mant * 2^(1-bias)
        (a / min_normal * scale).round() as u32
    } else {
        let e = a.log2().floor() as i32;
        // guard against log2 rounding at exact powers of two
        let e = if 2f64.powi(e) > a {
            e - 1
        } else if 2f64.powi(e + 1) <= a {
            e + 1
        } else {
            e
        };
        let m = ((a / 2f64.powi(e) - 1.0) * scale).round() as u32;
        (((e + bias) as u32) << mant) | m
    };
    sign | (bits as u8 & 0x7f)
}

/// Reads one serialized ONNX `TensorProto` (a `.pb` file of an ONNX test data set):
/// its name (empty when it has none) and its value. Element types and limits are the
/// loader's; integers are carried as `f32` like every value of this crate.
pub fn load_tensor_proto(bytes: &[u8]) -> Result<(String, crate::Tensor), crate::GraphError> {
    use prost::Message;
    let t = TensorProto::decode(bytes).map_err(|e| {
        crate::GraphError::graph(format!(
            "not a readable ONNX TensorProto (protobuf decoding failed: {e})"
        ))
    })?;
    let d =
        decode(&t).map_err(|m| crate::GraphError::graph(format!("tensor '{}': {m}", t.name)))?;
    let tensor = crate::Tensor::new(d.ty.dtype, d.ty.shape, d.values)
        .map_err(|m| crate::GraphError::graph(format!("tensor '{}': {m}", t.name)))?;
    Ok((t.name, tensor))
}

/// Serializes a tensor as an ONNX `TensorProto` called `name` (its data in `raw_data`):
/// the `.pb` files of an ONNX test data set, read back by [`load_tensor_proto`].
pub fn tensor_proto_bytes(name: &str, t: &crate::Tensor) -> Vec<u8> {
    use prost::Message;
    TensorProto {
        dims: t.shape.iter().map(|&d| d as i64).collect(),
        data_type: code_of(t.dtype),
        name: name.to_string(),
        raw_data: encode_raw(t.dtype, &t.data),
        ..TensorProto::default()
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_codes_round_trip() {
        for b in 0..=255u8 {
            for (dec, d, m, bias) in [
                (e4m3_to_f32 as fn(u8) -> f32, DType::F8E4M3, 3, 7),
                (e5m2_to_f32, DType::F8E5M2, 2, 15),
            ] {
                let v = dec(b);
                if v.is_nan() || v.is_infinite() {
                    continue;
                }
                assert_eq!(d.round(v), v, "{d} code {b:#x} = {v} is on the grid");
                let back = f32_to_fp8(v, m, bias);
                assert_eq!(dec(back), v, "{d} code {b:#x}");
            }
        }
        assert_eq!(e4m3_to_f32(0x7e), 448.0);
        assert_eq!(e5m2_to_f32(0x7b), 57344.0);
    }
}
