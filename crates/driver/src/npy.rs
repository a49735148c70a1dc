//! Reading `.npy` arrays as buffer contents: the header is checked against the file before
//! anything is allocated, the dtype must be a numeric one the buffers hold, Fortran-order
//! arrays are transposed into C order, and the shape must be the buffer's (see
//! docs/limits.md for the element limit).

use crate::BufferSpec;

/// A numeric `.npy` array read as f32 values in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// The array's shape.
    pub shape: Vec<usize>,
    /// The dtype as written in the header (`<f4`, `<i8`, ...).
    pub dtype: String,
    /// The values, row-major.
    pub data: Vec<f32>,
}

/// Reads a `.npy` file's bytes; arrays of more than `max_elements` elements are refused
/// before their data is read.
pub fn read(bytes: &[u8], max_elements: usize) -> Result<NpyArray, String> {
    check_header_length(bytes)?;
    check_header_is_flat(bytes)?;
    check_header_shape(bytes)?;
    let file = npyz::NpyFile::new(bytes).map_err(|e| e.to_string())?;
    let dtype = file.dtype().descr().trim_matches('\'').to_string();
    let item = match dtype.as_str() {
        "|b1" | "|i1" => 1,
        "<f2" => 2,
        "<f4" | "<i4" => 4,
        "<f8" | "<i8" => 8,
        other => {
            return Err(format!(
                "arrays of dtype {other} are not read (use little-endian float16, float32, float64, int32, int64, int8 or bool)"
            ))
        }
    };
    let shape: Vec<usize> = file
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    let n = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= max_elements)
        .ok_or_else(|| {
            format!("the array of shape {shape:?} has more than {max_elements} elements (see docs/limits.md)")
        })?;
    // The data must be in the file; checked here so a lying header allocates nothing.
    let header = header_end(bytes).unwrap_or(bytes.len());
    let present = bytes.len().saturating_sub(header) / item;
    if present < n {
        return Err(format!(
            "the header declares shape {shape:?} ({n} elements) but the file holds {present}"
        ));
    }
    let fortran = file.order() == npyz::Order::Fortran;
    let err = |e: std::io::Error| e.to_string();
    let data: Vec<f32> = match dtype.as_str() {
        "<f4" => file.into_vec::<f32>().map_err(err)?,
        "<f2" => file
            .into_vec::<half::f16>()
            .map_err(err)?
            .into_iter()
            .map(f32::from)
            .collect(),
        "<f8" => file
            .into_vec::<f64>()
            .map_err(err)?
            .into_iter()
            .map(|x| x as f32)
            .collect(),
        "|b1" => file
            .into_vec::<bool>()
            .map_err(err)?
            .into_iter()
            .map(|x| if x { 1.0 } else { 0.0 })
            .collect(),
        "|i1" => file
            .into_vec::<i8>()
            .map_err(err)?
            .into_iter()
            .map(f32::from)
            .collect(),
        "<i4" => file
            .into_vec::<i32>()
            .map_err(err)?
            .into_iter()
            .map(|x| x as f32)
            .collect(),
        _ => file
            .into_vec::<i64>()
            .map_err(err)?
            .into_iter()
            .map(|x| x as f32)
            .collect(),
    };
    let data = if fortran {
        to_c_order(&shape, &data)
    } else {
        data
    };
    Ok(NpyArray { shape, dtype, data })
}

/// The header length a `.npy` file declares must fit in the file.
fn check_header_length(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    match header_end(bytes) {
        Some(end) if end <= bytes.len() => Ok(()),
        Some(end) => Err(format!(
            "the header declares {} bytes but the file has only {}",
            end,
            bytes.len()
        )),
        None => Err(format!(
            "unsupported .npy format version {}.{}",
            bytes[6], bytes[7]
        )),
    }
}

/// The header of an array this reader takes is a flat dictionary whose one tuple is the
/// shape. Nested brackets only appear in structured dtypes, which are refused anyway, and
/// the header parser's time grows steeply with nesting: refuse them before parsing.
fn check_header_is_flat(bytes: &[u8]) -> Result<(), String> {
    let start = if bytes.get(6) == Some(&1) { 10 } else { 12 };
    let end = header_end(bytes).unwrap_or(bytes.len()).min(bytes.len());
    let header = bytes.get(start..end).unwrap_or_default();
    let count = |c: u8| header.iter().filter(|&&b| b == c).count();
    if count(b'{') > 1 || count(b'(') > 1 || count(b'[') > 0 {
        return Err(
            "the header is not a flat dictionary with one shape tuple (structured or nested dtypes are not read)"
                .into(),
        );
    }
    Ok(())
}

/// The shape tuple must be plain integers whose product fits 64 bits. The header
/// parser multiplies the dimensions without checking, so a shape such as
/// `(2, 88+0980888888888)` or one whose product overflows is refused here first.
fn check_header_shape(bytes: &[u8]) -> Result<(), String> {
    let start = if bytes.get(6) == Some(&1) { 10 } else { 12 };
    let end = header_end(bytes).unwrap_or(bytes.len()).min(bytes.len());
    let header = String::from_utf8_lossy(bytes.get(start..end).unwrap_or_default());
    let (Some(open), Some(close)) = (header.find('('), header.find(')')) else {
        // No tuple: the header parser reports what is missing.
        return Ok(());
    };
    let bad = || {
        format!(
            "the header's shape {} is not a tuple of non-negative integers whose product fits 64 bits",
            header.get(open..=close).unwrap_or("(…)")
        )
    };
    if close < open {
        return Err(bad());
    }
    let mut product: u64 = 1;
    for item in header[open + 1..close].split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if !item.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let d: u64 = item.parse().map_err(|_| bad())?;
        product = product.checked_mul(d).ok_or_else(bad)?;
    }
    Ok(())
}

/// Where the header ends: after the 10-byte (version 1) or 12-byte (versions 2 and 3)
/// preamble and the length it gives.
fn header_end(bytes: &[u8]) -> Option<usize> {
    match bytes.get(6)? {
        1 => {
            let len = u16::from_le_bytes([*bytes.get(8)?, *bytes.get(9)?]);
            Some(10 + usize::from(len))
        }
        2 | 3 => {
            let b = bytes.get(8..12)?;
            let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            usize::try_from(len).ok()?.checked_add(12)
        }
        _ => None,
    }
}

/// Column-major values of `shape` in row-major order.
fn to_c_order(shape: &[usize], data: &[f32]) -> Vec<f32> {
    let rank = shape.len();
    // Fortran strides: the first dimension is contiguous.
    let mut strides = vec![1usize; rank];
    for d in 1..rank {
        strides[d] = strides[d - 1] * shape[d - 1];
    }
    let mut out = Vec::with_capacity(data.len());
    let mut index = vec![0usize; rank];
    for _ in 0..data.len() {
        let at: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push(data.get(at).copied().unwrap_or(0.0));
        // The last dimension moves fastest in C order.
        for d in (0..rank).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}

/// The `.npy` bytes of a graph tensor, in the numpy dtype of its own: float16, float32,
/// int64, int32, int8 and bool as themselves; bfloat16 and the fp8 types, which numpy
/// lacks, as float32 (their values are exact in it).
pub fn write_tensor(t: &graph::Tensor) -> Result<Vec<u8>, String> {
    use graph::DType;
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    let data = &t.data;
    match t.dtype {
        DType::F16 => write_values(&shape, data.iter().map(|&x| half::f16::from_f32(x))),
        DType::I64 => write_values(&shape, data.iter().map(|&x| x as i64)),
        DType::I32 => write_values(&shape, data.iter().map(|&x| x as i32)),
        DType::I8 => write_values(&shape, data.iter().map(|&x| x as i8)),
        DType::Bool => write_values(&shape, data.iter().map(|&x| x != 0.0)),
        DType::F32 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => {
            write_values(&shape, data.iter().copied())
        }
    }
}

fn write_values<T: npyz::Serialize + npyz::AutoSerialize>(
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> Result<Vec<u8>, String> {
    use npyz::WriterBuilder;
    let err = |e: std::io::Error| e.to_string();
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut out)
        .begin_nd()
        .map_err(err)?;
    w.extend(values).map_err(err)?;
    w.finish().map_err(err)?;
    Ok(out.into_inner())
}

/// The graph dtype an array of numpy dtype `descr` (as [`NpyArray::dtype`]) holds exactly,
/// for checking a user's array against a graph tensor of dtype `want`: float32 arrays also
/// fill bfloat16 and fp8 tensors (numpy has no such types; values are rounded).
pub fn holds(descr: &str, want: graph::DType) -> bool {
    use graph::DType;
    match descr {
        "<f4" => matches!(
            want,
            DType::F32 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
        ),
        "<f2" => want == DType::F16,
        "<i8" => want == DType::I64,
        "<i4" => want == DType::I32,
        "|i1" => want == DType::I8,
        "|b1" => want == DType::Bool,
        _ => false,
    }
}

/// A buffer as `.npy` bytes: float16 buffers as float16, everything else as float32,
/// shaped like the largest view over it when that covers it exactly (else flat).
pub fn to_bytes(spec: &BufferSpec, data: &[f32]) -> Result<Vec<u8>, String> {
    use npyz::WriterBuilder;
    let err = |e: std::io::Error| e.to_string();
    let shape: Vec<u64> = if spec.shape.iter().product::<usize>() == data.len() {
        spec.shape.iter().map(|&d| d as u64).collect()
    } else {
        vec![data.len() as u64]
    };
    let mut out = Vec::new();
    {
        let cursor = std::io::Cursor::new(&mut out);
        if spec.elem == "f16" {
            let mut w = npyz::WriteOptions::<half::f16>::new()
                .default_dtype()
                .shape(&shape)
                .writer(cursor)
                .begin_nd()
                .map_err(err)?;
            w.extend(data.iter().map(|&x| half::f16::from_f32(x)))
                .map_err(err)?;
            w.finish().map_err(err)?;
        } else {
            let mut w = npyz::WriteOptions::<f32>::new()
                .default_dtype()
                .shape(&shape)
                .writer(cursor)
                .begin_nd()
                .map_err(err)?;
            w.extend(data.iter().copied()).map_err(err)?;
            w.finish().map_err(err)?;
        }
    }
    Ok(out)
}

/// The `.npy` dtypes that fill an element type: the matching one, and for types numpy has
/// no dtype for (bfloat16, the float8 types, narrow integers) the next wider one.
pub fn dtypes_for(elem: &str) -> &'static [&'static str] {
    match elem {
        "f16" => &["<f2"],
        "f32" => &["<f4"],
        "f64" => &["<f8"],
        "bf16" => &["<f4", "<f2"],
        "f8E4M3FN" | "f8E5M2" | "f8e4m3" | "f8e5m2" => &["<f2", "<f4"],
        "i32" => &["<i4"],
        "i64" | "index" => &["<i8"],
        "i1" | "i8" | "i16" => &["<i4", "<i8"],
        _ => &[],
    }
}

/// Checks an array's dtype against the element type it fills (see [`dtypes_for`]):
/// float64 data for an f32 buffer is refused rather than silently rounded.
pub fn check_dtype(array: &NpyArray, elem: &str) -> Result<(), String> {
    let ok = dtypes_for(elem);
    if ok.contains(&array.dtype.as_str()) {
        return Ok(());
    }
    Err(format!(
        "the array's dtype is {} ({}); it must be {}",
        array.dtype,
        numpy_name(&array.dtype),
        ok.iter()
            .map(|d| format!("{d} ({})", numpy_name(d)))
            .collect::<Vec<_>>()
            .join(" or ")
    ))
}

fn numpy_name(descr: &str) -> &'static str {
    match descr {
        "<f2" => "float16",
        "<f4" => "float32",
        "<f8" => "float64",
        "<i4" => "int32",
        "<i8" => "int64",
        _ => "other",
    }
}

/// Checks an array against the buffer it fills: the buffer's view shape, or flat with the
/// buffer's element count (how buffers whose views do not cover them are saved).
pub fn check_shape(array: &NpyArray, spec: &BufferSpec) -> Result<(), String> {
    let flat = array.shape.len() == 1 && array.shape[0] == spec.elements;
    let exact = array.shape == spec.shape && array.data.len() == spec.elements;
    if flat || exact {
        return Ok(());
    }
    Err(format!(
        "the array has shape {:?}; buffer '%{}' needs shape {:?} ({} elements, or a flat array of them)",
        array.shape, spec.name, spec.shape, spec.elements
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-1 `.npy` file of f32 values with the given header dictionary.
    fn file(dict: &str, data: &[f32]) -> Vec<u8> {
        let mut header = dict.to_string();
        while !(11 + header.len()).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.bytes());
        for x in data {
            out.extend(x.to_le_bytes());
        }
        out
    }

    fn spec(shape: &[usize]) -> BufferSpec {
        BufferSpec {
            name: "x".into(),
            elem: "f32".into(),
            elements: shape.iter().product(),
            shape: shape.to_vec(),
            address: None,
            role: crate::Role::In,
        }
    }

    #[test]
    fn fortran_order_arrays_are_transposed_into_c_order() {
        // [[0, 1, 2], [3, 4, 5]] stored column by column.
        let f = file(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0],
        );
        let a = read(&f, 1 << 20).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn the_shape_is_checked_not_only_the_element_count() {
        let f = file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (32, 128), }",
            &[0.0; 4096],
        );
        let a = read(&f, 1 << 20).unwrap();
        let e = check_shape(&a, &spec(&[64, 64])).unwrap_err();
        assert!(
            e.contains("shape [32, 128]") && e.contains("[64, 64]"),
            "{e}"
        );
        check_shape(&a, &spec(&[32, 128])).unwrap();
        check_shape(&a, &spec(&[4096])).unwrap_err();
    }

    #[test]
    fn shapes_that_are_not_plain_integers_or_overflow_are_errors() {
        for shape in [
            "(2, 88+09808888888880000000)",
            "(4294967296, 4294967296, 4)",
            "(2, -3)",
            "(2, 0x10)",
        ] {
            let header = format!("{{'descr': '<f2', 'fortran_order': False, 'shape': {shape}, }}");
            let e = read(&file(&header, &[0.0; 4]), 1 << 20).unwrap_err();
            assert!(
                e.contains("not a tuple of non-negative integers"),
                "{shape}: {e}"
            );
        }
        // The fuzzer's input that made the header parser overflow, kept as a seed.
        let found = include_bytes!("../../../fuzz/seeds/npy_read/shape_with_plus_overflows.npy");
        assert!(read(found, 1 << 20).unwrap_err().contains("not a tuple"));
        let f = file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
            &[1.5],
        );
        assert_eq!(read(&f, 1 << 20).unwrap().data, vec![1.5]);
    }

    #[test]
    fn lying_headers_are_refused_before_allocating() {
        // A 20-byte file whose version-2 header claims 4 GiB.
        let mut f = b"\x93NUMPY\x02\x00".to_vec();
        f.extend(u32::MAX.to_le_bytes());
        f.extend([b' '; 8]);
        let e = read(&f, 1 << 20).unwrap_err();
        assert!(e.contains("header declares"), "{e}");
        // A shape far larger than the data.
        let f = file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }",
            &[0.0; 4],
        );
        let e = read(&f, usize::MAX).unwrap_err();
        assert!(e.contains("file holds 4"), "{e}");
        let e = read(&f, 1 << 20).unwrap_err();
        assert!(e.contains("more than 1048576 elements"), "{e}");
    }

    #[test]
    fn nested_headers_are_refused_before_the_header_parser_sees_them() {
        // Found by fuzzing: nested braces inside the shape made parsing take seconds.
        let f = include_bytes!("../../../fuzz/seeds/npy_read/nested_braces_header.npy");
        let e = read(f, 1 << 20).unwrap_err();
        assert!(e.contains("flat dictionary"), "{e}");
        let f = file(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
            &[0.0; 2],
        );
        assert!(read(&f, 1 << 20).unwrap_err().contains("flat dictionary"));
    }

    #[test]
    fn tensors_round_trip_in_their_own_dtype() {
        use graph::{DType, Tensor};
        for (dtype, descr, data) in [
            (DType::F32, "<f4", vec![1.5, -2.0, 0.25, 3.0]),
            (DType::F16, "<f2", vec![1.5, -2.0, 0.25, 3.0]),
            (DType::I64, "<i8", vec![1.0, -7.0, 0.0, 40.0]),
            (DType::I32, "<i4", vec![1.0, -7.0, 0.0, 40.0]),
            (DType::I8, "|i1", vec![1.0, -7.0, 0.0, 40.0]),
            (DType::Bool, "|b1", vec![1.0, 0.0, 0.0, 1.0]),
            (DType::BF16, "<f4", vec![1.5, -2.0, 0.25, 3.0]),
        ] {
            let t = Tensor::new(dtype, vec![2, 2], data).unwrap();
            let bytes = write_tensor(&t).unwrap();
            let a = read(&bytes, 16).unwrap();
            assert_eq!((a.dtype.as_str(), &a.shape), (descr, &t.shape), "{dtype}");
            assert_eq!(a.data, t.data, "{dtype}");
            assert!(holds(&a.dtype, dtype));
        }
        assert!(!holds("<f8", DType::F32) && !holds("<f4", DType::F16));
    }

    #[test]
    fn written_buffers_read_back_with_their_shape_and_dtype() {
        let mut s = spec(&[2, 3]);
        let data = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0];
        let a = read(&to_bytes(&s, &data).unwrap(), 16).unwrap();
        assert_eq!(
            (a.dtype.as_str(), &a.shape, &a.data[..]),
            ("<f4", &vec![2, 3], &data[..])
        );
        check_dtype(&a, "f32").unwrap();
        s.elem = "f16".into();
        let a = read(&to_bytes(&s, &data).unwrap(), 16).unwrap();
        assert_eq!(a.dtype, "<f2");
        let e = check_dtype(&a, "f32").unwrap_err();
        assert!(e.contains("<f2 (float16); it must be <f4 (float32)"), "{e}");
        // Buffers their views do not cover are written flat.
        let a = read(&to_bytes(&s, &data[..4]).unwrap(), 16).unwrap();
        assert_eq!(a.shape, vec![4]);
    }

    #[test]
    fn other_dtypes_are_refused() {
        for descr in ["'>f4'", "'|u1'", "'<c8'"] {
            let f = file(
                &format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (1,), }}"),
                &[0.0],
            );
            let e = read(&f, 16).unwrap_err();
            assert!(e.contains("not read"), "{e}");
        }
    }
}
