//! Stick layouts and the `layout` pass.
//!
//! A stick is `stick_bytes` (128) bytes; the stick dim is always the last device dim, of size
//! elements-per-stick. Default layout of host dims h0..h(N-1): `[h1, ..., h(N-2), sticks(h(N-1)),
//! h0, eps]`, padding filling the last stick. Host dims of size 1 other than the last do not
//! take part. The last host dim always supplies the stick, even when it has size 1: that is
//! the "sparse" layout (one element per stick) reductions over the stick dim produce, and it
//! keeps a reduced operand's stick dim aligned with the operand it is broadcast against.
//! A rank-0 tensor is one element in one stick.
//!
//! Operand rules (checked by the pass): pointwise and reduction operands are sticked on their
//! last host dim; batchmatmul A is sticked on K, B and C on N, and B's K is zero-padded to
//! whole sticks (a device K extent rounded up, see [`Layout::with_padded_dim`]). Graph inputs
//! and initializers take the layout their consumers need (the host writes them padded); an
//! intermediate whose layout disagrees with a consumer gets a `restickify` op.
//!
//! Element types: a layout's dtype is the tensor's device dtype ([`device_dtype`]). The
//! device has no 64-bit integer path, so an i64 tensor (TopK indices, token ids) is held as
//! i32, 32 to a stick: the host writes an i64 input into its i32 buffer and reads an i64
//! output back from one. Indices and ids are far below 2^31, and the reference carries
//! integers in f32 anyway (exact to 2^24). Bool is one byte (128 to a stick), like i8.

use crate::ops::{dsize, pointwise_iteration_pub, DeviceOp, DeviceOpKind, Movement};
use crate::{Compilation, CompileError};
use graph::DType;
use std::collections::BTreeMap;

/// Where each host element of a tensor sits on the device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub host_shape: Vec<usize>,
    pub dtype: DType,
    /// Device dims, outermost first; the last is the within-stick index.
    pub device_size: Vec<usize>,
    /// Host-element stride of each device dim (-1 for synthetic dims).
    pub stride_map: Vec<i64>,
    /// Host dim each device dim indexes; the stick host dim appears twice (stick count and
    /// within-stick index, the latter always last).
    pub host_dim_of_device_dim: Vec<Option<usize>>,
    pub elems_per_stick: usize,
    /// `stick_bytes` x product of all device dims but the last. 64-bit on every target:
    /// a long sequence's attention scores pass 4 GiB, past a 32-bit (wasm) `usize`.
    pub device_bytes: u64,
}

fn checked_product(xs: &[usize]) -> Option<usize> {
    xs.iter().try_fold(1usize, |a, &b| a.checked_mul(b))
}

impl Layout {
    /// The default stick layout (see the module doc).
    pub fn default_for(
        shape: &[usize],
        dtype: DType,
        stick_bytes: usize,
    ) -> Result<Layout, CompileError> {
        let ds = dsize(dtype);
        if stick_bytes == 0 || stick_bytes % ds != 0 {
            return Err(CompileError::new(
                format!(
                    "a stick of {stick_bytes} bytes does not hold a whole number of {} elements",
                    dtype.name()
                ),
                None,
            ));
        }
        let eps = stick_bytes / ds;
        let too_big = || {
            CompileError::new(
                format!("tensor of shape {shape:?} is too large to lay out"),
                None,
            )
        };
        let mut host_strides = vec![1i64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            host_strides[i] = host_strides[i + 1]
                .checked_mul(i64::try_from(shape[i + 1]).map_err(|_| too_big())?)
                .ok_or_else(too_big)?;
        }
        let (mut size, mut stride, mut host) = (Vec::new(), Vec::new(), Vec::new());
        if shape.is_empty() {
            size = vec![1, eps];
            stride = vec![-1, -1];
            host = vec![None, None];
        } else {
            let last = shape.len() - 1;
            let keep: Vec<usize> = (0..last).filter(|&i| shape[i] != 1).collect();
            for &h in keep.iter().skip(1) {
                size.push(shape[h]);
                stride.push(host_strides[h]);
                host.push(Some(h));
            }
            size.push(shape[last].div_ceil(eps));
            stride.push(eps as i64);
            host.push(Some(last));
            if let Some(&h0) = keep.first() {
                size.push(shape[h0]);
                stride.push(host_strides[h0]);
                host.push(Some(h0));
            }
            size.push(eps);
            stride.push(1);
            host.push(Some(last));
        }
        let mut l = Layout {
            host_shape: shape.to_vec(),
            dtype,
            device_size: size,
            stride_map: stride,
            host_dim_of_device_dim: host,
            elems_per_stick: eps,
            device_bytes: 0,
        };
        l.device_bytes = l.compute_bytes().ok_or_else(too_big)?;
        checked_product(shape).ok_or_else(too_big)?;
        Ok(l)
    }

    fn compute_bytes(&self) -> Option<u64> {
        let n = self.device_size.len();
        let sticks = self.device_size[..n.saturating_sub(1)]
            .iter()
            .try_fold(1u64, |a, &b| a.checked_mul(b as u64))?;
        sticks
            .checked_mul(self.elems_per_stick as u64)?
            .checked_mul(dsize(self.dtype) as u64)
    }

    /// The host dim the stick is made of.
    pub fn stick_host_dim(&self) -> Option<usize> {
        self.host_dim_of_device_dim.last().copied().flatten()
    }

    /// True when device dim `j` counts sticks (as opposed to elements).
    pub fn is_stick_count_dim(&self, j: usize) -> bool {
        let h = self.host_dim_of_device_dim.get(j).copied().flatten();
        j + 1 < self.device_size.len() && h.is_some() && h == self.stick_host_dim()
    }

    /// This layout with host dim `host_dim`'s device extent rounded up to a multiple of
    /// `multiple` (zero padding). Used for matmul B's K. A host dim that does not take part
    /// (size 1) or that is the stick dim is left alone.
    pub fn with_padded_dim(
        &self,
        host_dim: usize,
        multiple: usize,
    ) -> Result<Layout, CompileError> {
        let mut l = self.clone();
        if multiple == 0 {
            return Ok(l);
        }
        for j in 0..l.device_size.len() {
            if l.host_dim_of_device_dim.get(j).copied().flatten() == Some(host_dim)
                && !l.is_stick_count_dim(j)
                && j + 1 < l.device_size.len()
            {
                l.device_size[j] = l.device_size[j].div_ceil(multiple) * multiple;
            }
        }
        l.device_bytes = l
            .compute_bytes()
            .ok_or_else(|| CompileError::new("padded tensor is too large to lay out", None))?;
        Ok(l)
    }

    /// Whether `other` puts the element of every row-major host position at the same
    /// device byte as this layout does: a reshape between the two moves nothing. Only
    /// layouts without padding or synthetic dims are compared (a padded stick or dim puts
    /// gaps at places that depend on the host shape); their device dims are reduced to a
    /// canonical list of (extent, host stride), merging dims that step through host memory
    /// contiguously, and the lists compared.
    pub fn same_bytes_as(&self, other: &Layout) -> bool {
        fn canonical(l: &Layout) -> Option<Vec<(usize, i64)>> {
            let n = l.device_size.len();
            let mut dims: Vec<(usize, i64)> = Vec::new();
            for j in 0..n {
                let size = l.device_size[j];
                let h = l.host_dim_of_device_dim.get(j).copied().flatten();
                let extent = match h {
                    None => 1,
                    Some(h) if j + 1 == n => l.host_shape[h].min(l.elems_per_stick),
                    Some(h) if l.is_stick_count_dim(j) => {
                        if l.host_shape[h] % l.elems_per_stick != 0 {
                            return None;
                        }
                        l.host_shape[h] / l.elems_per_stick
                    }
                    Some(h) => l.host_shape[h],
                };
                if size != extent {
                    return None;
                }
                if size == 1 {
                    continue;
                }
                let stride = *l.stride_map.get(j)?;
                if stride < 0 {
                    return None;
                }
                match dims.last_mut() {
                    Some(outer) if outer.1 == stride * size as i64 => {
                        *outer = (outer.0 * size, stride);
                    }
                    _ => dims.push((size, stride)),
                }
            }
            Some(dims)
        }
        self.dtype == other.dtype
            && self.elems_per_stick == other.elems_per_stick
            && self.device_bytes == other.device_bytes
            && checked_product(&self.host_shape) == checked_product(&other.host_shape)
            && matches!((canonical(self), canonical(other)), (Some(a), Some(b)) if a == b)
    }

    /// A layout of this tensor (whose host shape is kept) under which a reshape to the
    /// tensor laid out as `y` moves no byte: `y`'s device dims with each of `y`'s host dims
    /// replaced by the run of this tensor's dims it merges. `None` when some dim of `y` is
    /// not such a merge (the reshape splits a dim of this tensor), when the stick would
    /// change, or when `y` has padding.
    pub fn pulled_back_from(&self, y: &Layout) -> Option<Layout> {
        let (xs, ys) = (&self.host_shape, &y.host_shape);
        let eps = self.elems_per_stick;
        if xs.is_empty()
            || ys.is_empty()
            || self.dtype != y.dtype
            || eps != y.elems_per_stick
            || xs[xs.len() - 1] % eps != 0
        {
            return None;
        }
        if ys[ys.len() - 1] % eps != 0 {
            return None;
        }
        // The run of x dims each y dim merges: x[groups[h].0 .. groups[h].1]. A unit y dim
        // merges none; unit x dims go with the run they sit in.
        let mut groups = Vec::with_capacity(ys.len());
        let mut at = 0;
        for &want in ys {
            let start = at;
            if want != 1 {
                let mut product = 1usize;
                while product < want {
                    product = product.checked_mul(*xs.get(at)?)?;
                    at += 1;
                }
                if product != want {
                    return None;
                }
            }
            groups.push((start, at));
        }
        if xs[at..].iter().any(|&d| d != 1) {
            return None;
        }
        // The last y dim is at least a stick, so its run is the last; it ends with x's.
        groups.last_mut()?.1 = xs.len();
        let last = xs.len() - 1;
        let mut strides = vec![1i64; xs.len()];
        for d in (0..last).rev() {
            strides[d] = strides[d + 1].checked_mul(i64::try_from(xs[d + 1]).ok()?)?;
        }
        let (mut size, mut stride, mut host) = (Vec::new(), Vec::new(), Vec::new());
        let n = y.device_size.len();
        for j in 0..n {
            let h = y.host_dim_of_device_dim.get(j).copied().flatten()?;
            let (a, b) = groups[h];
            if j + 1 == n {
                if b != xs.len() {
                    return None;
                }
                size.push(eps);
                stride.push(1);
                host.push(Some(last));
            } else if y.is_stick_count_dim(j) {
                if b != xs.len() || ys[h] % eps != 0 {
                    return None;
                }
                for d in a..last {
                    if xs[d] != 1 {
                        size.push(xs[d]);
                        stride.push(strides[d]);
                        host.push(Some(d));
                    }
                }
                size.push(xs[last] / eps);
                stride.push(eps as i64);
                host.push(Some(last));
            } else {
                for d in a..b {
                    if xs[d] != 1 {
                        size.push(xs[d]);
                        stride.push(strides[d]);
                        host.push(Some(d));
                    }
                }
            }
        }
        let mut l = Layout {
            host_shape: xs.clone(),
            dtype: self.dtype,
            device_size: size,
            stride_map: stride,
            host_dim_of_device_dim: host,
            elems_per_stick: eps,
            device_bytes: 0,
        };
        l.device_bytes = l.compute_bytes()?;
        Some(l)
    }

    /// The layout of `transpose(self, perm)` that holds this layout's bytes unchanged: the
    /// same device dims, each now indexing the output dim its host dim moved to. `None`
    /// when the transpose moves the last (stick) dim, when `perm` is not a permutation, or
    /// when this layout has synthetic dims or zero-padded element dims.
    pub fn permuted(&self, perm: &[usize]) -> Option<Layout> {
        let n = self.host_shape.len();
        let mut inv = vec![usize::MAX; n];
        for (h, &d) in perm.iter().enumerate() {
            if d >= n || inv[d] != usize::MAX {
                return None;
            }
            inv[d] = h;
        }
        if n == 0
            || perm.len() != n
            || perm[n - 1] != n - 1
            || self.unpadded_device_size() != self.device_size
            || self.host_dim_of_device_dim.iter().any(Option::is_none)
        {
            return None;
        }
        let shape: Vec<usize> = perm.iter().map(|&d| self.host_shape[d]).collect();
        let mut strides = vec![1i64; n];
        for h in (0..n - 1).rev() {
            strides[h] = strides[h + 1].checked_mul(i64::try_from(shape[h + 1]).ok()?)?;
        }
        let last = self.device_size.len().checked_sub(1)?;
        let mut l = self.clone();
        l.host_shape = shape;
        for j in 0..self.device_size.len() {
            let y = inv[self.host_dim_of_device_dim[j]?];
            l.host_dim_of_device_dim[j] = Some(y);
            l.stride_map[j] = if j == last {
                1
            } else if self.is_stick_count_dim(j) {
                self.elems_per_stick as i64
            } else {
                strides[y]
            };
        }
        Some(l)
    }

    /// Each device dim's size without the zero padding of element dims (matmul B's K,
    /// see [`Layout::with_padded_dim`]): an element dim's host extent; stick and lane
    /// dims, which hold their padding in the last stick, as they are.
    pub fn unpadded_device_size(&self) -> Vec<usize> {
        (0..self.device_size.len())
            .map(
                |j| match self.host_dim_of_device_dim.get(j).copied().flatten() {
                    Some(h) if j + 1 < self.device_size.len() && !self.is_stick_count_dim(j) => {
                        self.host_shape.get(h).copied().unwrap_or(1)
                    }
                    _ => self.device_size[j],
                },
            )
            .collect()
    }

    /// Device elements (including padding).
    pub fn device_elems(&self) -> usize {
        checked_product(&self.device_size).unwrap_or(0)
    }

    /// Device index of a host element. Missing host coordinates count as 0.
    pub fn device_index_of(&self, host_index: &[usize]) -> Vec<usize> {
        (0..self.device_size.len())
            .map(
                |j| match self.host_dim_of_device_dim.get(j).copied().flatten() {
                    None => 0,
                    Some(h) => self.device_coord(j, host_index.get(h).copied().unwrap_or(0)),
                },
            )
            .collect()
    }

    /// The index along device dim `j` of host coordinate `x` of the host dim it reads: the
    /// element within its stick for the last dim, the stick for a stick-count dim, else `x`.
    fn device_coord(&self, j: usize, x: usize) -> usize {
        let eps = self.elems_per_stick.max(1);
        if j + 1 == self.device_size.len() {
            x % eps
        } else if self.is_stick_count_dim(j) {
            x / eps
        } else {
            x
        }
    }

    /// Row-major offset (in elements) of a device index.
    pub fn offset_of_device_index(&self, idx: &[usize]) -> usize {
        self.device_size
            .iter()
            .zip(idx)
            .fold(0usize, |acc, (&s, &i)| {
                acc.saturating_mul(s).saturating_add(i)
            })
    }

    /// Device offset (in elements) of a host element.
    pub fn device_offset_of(&self, host_index: &[usize]) -> usize {
        self.offset_of_device_index(&self.device_index_of(host_index))
    }

    /// Calls `f(flat, index)` for every host element in row-major order (the tests' slow
    /// reference for [`Layout::for_each_host_offset`]).
    #[cfg(test)]
    fn for_each_host(&self, mut f: impl FnMut(usize, &[usize])) {
        let n = checked_product(&self.host_shape).unwrap_or(0);
        let mut idx = vec![0usize; self.host_shape.len()];
        for flat in 0..n {
            f(flat, &idx);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.host_shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// Per host dim `h`, the device offset (in elements) that index `x` of that dim adds,
    /// for every `x < host_shape[h]`. A device offset is separable over host dims (each
    /// device dim reads one host dim, or none), so an element's offset is the sum of its
    /// dims' entries: [`Layout::device_offset_of`] without a division or an allocation
    /// per element.
    fn host_dim_offsets(&self) -> Vec<Vec<usize>> {
        let n = self.device_size.len();
        // Row-major strides of the device dims.
        let mut stride = vec![1usize; n];
        for j in (0..n.saturating_sub(1)).rev() {
            stride[j] = stride[j + 1].saturating_mul(self.device_size[j + 1]);
        }
        let mut tables: Vec<Vec<usize>> =
            self.host_shape.iter().map(|&e| vec![0usize; e]).collect();
        for (j, &st) in stride.iter().enumerate() {
            let Some(h) = self.host_dim_of_device_dim.get(j).copied().flatten() else {
                continue;
            };
            if let Some(t) = tables.get_mut(h) {
                for (x, o) in t.iter_mut().enumerate() {
                    *o = o.saturating_add(self.device_coord(j, x).saturating_mul(st));
                }
            }
        }
        tables
    }

    /// Calls `f(flat, offset)` for every host element in row-major order with its device
    /// offset, as [`Layout::device_offset_of`] gives it.
    fn for_each_host_offset(&self, mut f: impl FnMut(usize, usize)) {
        let tables = self.host_dim_offsets();
        let Some((inner, outer)) = tables.split_last() else {
            // A scalar: one element at offset 0.
            f(0, 0);
            return;
        };
        if inner.is_empty() || outer.iter().any(|t| t.is_empty()) {
            return;
        }
        let mut idx = vec![0usize; outer.len()];
        let mut flat = 0usize;
        loop {
            let base = outer
                .iter()
                .zip(&idx)
                .fold(0usize, |a, (t, &i)| a.saturating_add(t[i]));
            for &o in inner {
                f(flat, base.saturating_add(o));
                flat += 1;
            }
            let mut d = outer.len();
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < outer[d].len() {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// Row-major host data to a device-ordered buffer; padding is zero. A short `host`
    /// buffer reads as zeros past its end.
    pub fn pack(&self, host: &[f32]) -> Vec<f32> {
        let mut dev = vec![0.0f32; self.device_elems()];
        self.for_each_host_offset(|flat, off| {
            if let Some(slot) = dev.get_mut(off) {
                *slot = host.get(flat).copied().unwrap_or(0.0);
            }
        });
        dev
    }

    /// The inverse of [`Layout::pack`].
    pub fn unpack(&self, device: &[f32]) -> Vec<f32> {
        let mut host = vec![0.0f32; checked_product(&self.host_shape).unwrap_or(0)];
        self.for_each_host_offset(|flat, off| {
            let v = device.get(off).copied().unwrap_or(0.0);
            if let Some(slot) = host.get_mut(flat) {
                *slot = v;
            }
        });
        host
    }

    /// `f16[128,100] -> [2, 128, 64] strides [64, 100, 1], 32768 B`
    pub fn describe(&self) -> String {
        let shape: Vec<String> = self.host_shape.iter().map(|d| d.to_string()).collect();
        format!(
            "{}[{}] -> {:?} strides {:?}, {} B",
            self.dtype.name(),
            shape.join(","),
            self.device_size,
            self.stride_map,
            self.device_bytes
        )
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "hostShape": self.host_shape,
            "dtype": self.dtype.name(),
            "deviceSize": self.device_size,
            "strideMap": self.stride_map,
            "hostDimOfDeviceDim": self.host_dim_of_device_dim,
            "elemsPerStick": self.elems_per_stick,
            "deviceBytes": self.device_bytes,
        })
    }
}

/// The element type a tensor of host dtype `dt` has on the device (see the module doc).
pub fn device_dtype(dt: DType) -> DType {
    match dt {
        DType::I64 => DType::I32,
        other => other,
    }
}

/// The layout operand `i` (inputs, then outputs) of `op` needs, given its default layout.
fn required(op: &DeviceOp, operand: usize, default: &Layout) -> Result<Layout, CompileError> {
    if op.kind.is_matmul() && operand == 1 && default.host_shape.len() >= 2 {
        let k = default.host_shape.len() - 2;
        return default.with_padded_dim(k, default.elems_per_stick);
    }
    Ok(default.clone())
}

/// Whether a tensor's current layout serves operand `operand` of `op`.
fn satisfies(op: &DeviceOp, operand: usize, have: &Layout, need: &Layout) -> bool {
    if op.kind.is_matmul() && operand == 1 {
        return have == need;
    }
    // Everyone else needs the stick made of the operand's last host dim.
    have.host_shape == need.host_shape && have.stick_host_dim() == need.stick_host_dim()
}

/// A note for the snapshot about why a tensor has its layout.
pub type LayoutNotes = BTreeMap<String, String>;

/// The `layout` pass: fills `c.layouts`, inserting restickify ops where needed.
pub fn run(c: &mut Compilation) -> Result<(LayoutNotes, Vec<String>), CompileError> {
    let sb = c.target.stick_bytes;
    let mut notes = LayoutNotes::new();
    let mut produced: BTreeMap<String, usize> = BTreeMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        for o in &op.outputs {
            produced.insert(o.clone(), i);
        }
    }
    let default_of = |c: &Compilation, t: &str, at: &str| -> Result<Layout, CompileError> {
        let ty = c.ty(t, at)?;
        Layout::default_for(&ty.shape, device_dtype(ty.dtype), sb)
            .map_err(|e| CompileError::at(at, format!("tensor '{t}': {}", e.message)))
    };
    for (t, ty) in &c.types {
        if device_dtype(ty.dtype) != ty.dtype {
            notes.insert(
                t.clone(),
                format!(
                    "{} held as {} on the device",
                    ty.dtype.name(),
                    device_dtype(ty.dtype).name()
                ),
            );
        }
    }
    // 1. Graph inputs and initializers take what their consumers need.
    for op in c.ops.clone() {
        for (i, t) in op.inputs.iter().enumerate() {
            if produced.contains_key(t) || c.layouts.contains_key(t) {
                continue;
            }
            let def = default_of(c, t, &op.name)?;
            let need = required(&op, i, &def)?;
            if need != def {
                notes.insert(
                    t.clone(),
                    format!(
                        "matmul kernel of '{}': K zero-padded to whole sticks",
                        op.name
                    ),
                );
            }
            c.layouts.insert(t.clone(), need);
        }
    }
    // The ops reading each tensor, by index in `c.ops` (restickify ops go to a new list,
    // so these indices stay valid through the loop below).
    let mut readers: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        for t in &op.inputs {
            let list = readers.entry(t.clone()).or_default();
            if !list.contains(&i) {
                list.push(i);
            }
        }
    }
    // 2. Everything else starts in the default layout; 3. check every operand.
    let mut out_ops = Vec::new();
    let mut restick = Vec::new();
    for op in c.ops.clone() {
        let mut op = op;
        for i in 0..op.inputs.len() {
            let t = op.inputs[i].clone();
            let def = default_of(c, &t, &op.name)?;
            let have = match c.layouts.get(&t) {
                Some(l) => l.clone(),
                None => {
                    c.layouts.insert(t.clone(), def.clone());
                    def.clone()
                }
            };
            let need = required(&op, i, &def)?;
            if satisfies(&op, i, &have, &need) {
                continue;
            }
            let ty = c.ty(&t, &op.name)?.clone();
            let base = format!("{t}@restick");
            let mut name = base.clone();
            let mut k = 1;
            while c.types.contains_key(&name) {
                name = format!("{base}_{k}");
                k += 1;
            }
            c.types.insert(name.clone(), ty.clone());
            let why = format!(
                "'{}' operand {} needs {:?}, '{t}' is {:?}",
                op.name, i, need.device_size, have.device_size
            );
            notes.insert(name.clone(), format!("restickified copy of '{t}': {why}"));
            c.layouts.insert(name.clone(), need);
            let rop = DeviceOp {
                name: format!("{}/restickify_{i}", op.name),
                kind: DeviceOpKind::Movement(Movement::Restickify),
                inputs: vec![t.clone()],
                outputs: vec![name.clone()],
                iteration: pointwise_iteration_pub(&ty.shape),
                attrs: Default::default(),
            };
            restick.push(format!("{}: {t} -> {name} ({why})", rop.name));
            out_ops.push(rop);
            op.inputs[i] = name;
        }
        for o in &op.outputs {
            if c.layouts.contains_key(o) {
                continue;
            }
            let def = default_of(c, o, &op.name)?;
            // The generic movement kernels (which bring boxes to host order and back) write
            // any layout at the same cost: where such an output's only reader is a reshape,
            // it is written in the bytes the reshape's output would hold.
            let through = match (&op.kind, readers.get(o.as_str()).map(Vec::as_slice)) {
                (DeviceOpKind::Movement(m), Some(&[r]))
                    if matches!(
                        m,
                        Movement::Transpose | Movement::Expand | Movement::Slice | Movement::Concat
                    ) && !c.graph.outputs.contains(o) =>
                {
                    let r = &c.ops[r];
                    match r.outputs.as_slice() {
                        [y] if r.kind == DeviceOpKind::Movement(Movement::Reshape)
                            && r.inputs.len() == 1
                            && !c.graph.outputs.contains(y) =>
                        {
                            let y_def = default_of(c, y, &r.name)?;
                            def.pulled_back_from(&y_def)
                                .filter(|l| l.same_bytes_as(&y_def))
                                .map(|l| (l, y.clone()))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            // A transpose that keeps the stick writes nothing where its output can keep the
            // input's bytes: unless a matmul needs the output as B (in its own layout).
            let through = through.or_else(|| {
                let x = c.layouts.get(op.inputs.first()?)?;
                let perm = crate::movement_split::transpose_perm(&op, x.host_shape.len())?;
                let as_b = readers.get(o.as_str()).is_some_and(|rs| {
                    rs.iter().any(|&r| {
                        let r = &c.ops[r];
                        r.kind.is_matmul() && r.inputs.get(1) == Some(o)
                    })
                });
                if as_b || c.graph.outputs.contains(o) {
                    return None;
                }
                x.permuted(&perm).map(|l| (l, String::new()))
            });
            match through {
                Some((l, y)) if l != def && y.is_empty() => {
                    notes.insert(
                        o.clone(),
                        "its input's bytes, relabelled: the transpose copies nothing".to_string(),
                    );
                    c.layouts.insert(o.clone(), l);
                }
                Some((l, y)) if l != def => {
                    notes.insert(
                        o.clone(),
                        format!(
                            "written as '{y}' lays it out, so the reshape to it copies nothing"
                        ),
                    );
                    c.layouts.insert(o.clone(), l);
                }
                _ => {
                    c.layouts.insert(o.clone(), def);
                }
            }
        }
        out_ops.push(op);
    }
    c.ops = out_ops;
    c.views = find_views(c);
    for (y, x) in &c.views {
        notes.insert(
            y.clone(),
            format!("view of '{x}': the same device bytes, so its reshape copies nothing"),
        );
    }
    Ok((notes, restick))
}

/// The reshape and transpose outputs that can share their input's DRAM buffer: laid out so that every
/// element sits at the byte its input's copy sits at. Graph outputs keep their own buffer.
/// Each maps to the root of its chain of views.
fn find_views(c: &Compilation) -> BTreeMap<String, String> {
    let mut views: BTreeMap<String, String> = BTreeMap::new();
    for op in &c.ops {
        let moves = matches!(
            op.kind,
            DeviceOpKind::Movement(Movement::Reshape | Movement::Transpose)
        );
        if !moves
            || op.inputs.len() != 1
            || op.outputs.len() != 1
            || c.graph.outputs.contains(&op.outputs[0])
        {
            continue;
        }
        let (x, y) = (&op.inputs[0], &op.outputs[0]);
        let (Some(a), Some(b)) = (c.layouts.get(x), c.layouts.get(y)) else {
            continue;
        };
        let same = match crate::movement_split::transpose_perm(op, a.host_shape.len()) {
            Some(perm) => a.permuted(&perm).as_ref() == Some(b),
            None => op.kind == DeviceOpKind::Movement(Movement::Reshape) && a.same_bytes_as(b),
        };
        if same {
            let root = views.get(x).cloned().unwrap_or_else(|| x.clone());
            views.insert(y.clone(), root);
        }
    }
    views
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let l = Layout::default_for(&[3, 70, 130], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![70, 3, 3, 64]);
        assert_eq!(l.stride_map, vec![130, 64, 9100, 1]);
        assert_eq!(l.device_bytes, 80_640);
        assert_eq!(l.device_index_of(&[2, 5, 100]), vec![5, 1, 2, 36]);
        assert_eq!(l.device_offset_of(&[2, 5, 100]), 3236);
        assert_eq!(l.elems_per_stick, 64);
    }

    #[test]
    fn small_ranks_and_unit_dims() {
        let l = Layout::default_for(&[130], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![3, 64]);
        let l = Layout::default_for(&[5, 130], DType::F32, 128).unwrap();
        assert_eq!(l.device_size, vec![5, 5, 32]);
        assert_eq!(l.stride_map, vec![32, 130, 1]);
        // Unit dims other than the last do not take part.
        let l = Layout::default_for(&[1, 7, 1, 130], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![3, 7, 64]);
        // A kept unit last dim is the sparse layout: one element per stick.
        let l = Layout::default_for(&[128, 1], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![1, 128, 64]);
        assert_eq!(l.device_bytes, 128 * 128);
        let l = Layout::default_for(&[], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![1, 64]);
        assert_eq!(l.pack(&[3.0])[0], 3.0);
        assert!(Layout::default_for(&[4], DType::F32, 6).is_err());
        assert!(Layout::default_for(&[usize::MAX, 4], DType::F32, 128).is_err());
    }

    #[test]
    fn a_layout_past_4_gib_counts_its_bytes_in_64_bits() {
        // A seq 8192 attention's scores: 2^31 f16 elements, 4 GiB, past a 32-bit usize (the
        // page's wasm build) but within its element count.
        let l = Layout::default_for(&[1, 32, 8192, 8192], DType::F16, 128).unwrap();
        assert_eq!(l.device_bytes, 4 << 30);
    }

    #[test]
    fn padded_k_for_matmul_kernel() {
        let l = Layout::default_for(&[100, 130], DType::F16, 128).unwrap();
        assert_eq!(l.device_size, vec![3, 100, 64]);
        let p = l.with_padded_dim(0, 64).unwrap();
        assert_eq!(p.device_size, vec![3, 128, 64]);
        assert_eq!(p.device_bytes, 3 * 128 * 128);
        let host: Vec<f32> = (0..100 * 130).map(|i| i as f32).collect();
        let dev = p.pack(&host);
        assert_eq!(p.unpack(&dev), host);
        // padded rows are zero
        assert_eq!(dev[p.offset_of_device_index(&[0, 100, 0])], 0.0);
    }

    /// Every host element maps to exactly one device slot, pack/unpack round trip, and the
    /// padding is zero, over a deterministic sweep of shapes and dtypes.
    #[test]
    fn bijection_and_round_trip_over_many_shapes() {
        let dims = [1usize, 2, 3, 5, 31, 64, 65, 130];
        let mut shapes: Vec<Vec<usize>> = vec![vec![]];
        for &a in &dims {
            shapes.push(vec![a]);
            for &b in &dims {
                shapes.push(vec![a, b]);
                for &c in &[1usize, 3] {
                    shapes.push(vec![c, a, b]);
                }
            }
        }
        shapes.push(vec![3, 70, 130]);
        shapes.push(vec![70, 1, 65]);
        shapes.push(vec![2, 1, 3, 1, 65]);
        shapes.push(vec![2, 3, 4, 5, 6]);
        let mut checked = 0;
        for dt in [DType::F16, DType::F32, DType::I8, DType::BF16] {
            for s in &shapes {
                for l in [
                    Layout::default_for(s, dt, 128).unwrap(),
                    Layout::default_for(s, dt, 128)
                        .unwrap()
                        .with_padded_dim(s.len().saturating_sub(2), 64)
                        .unwrap(),
                ] {
                    let n: usize = s.iter().product();
                    let mut seen = vec![false; l.device_elems()];
                    let mut idx = vec![0usize; s.len()];
                    for _ in 0..n {
                        let off = l.device_offset_of(&idx);
                        assert!(
                            off < seen.len(),
                            "{s:?} {idx:?} -> {off} out of {}",
                            seen.len()
                        );
                        assert!(
                            !seen[off],
                            "{s:?}: two host elements at device offset {off}"
                        );
                        seen[off] = true;
                        let di = l.device_index_of(&idx);
                        for (j, &x) in di.iter().enumerate() {
                            assert!(x < l.device_size[j]);
                        }
                        for d in (0..idx.len()).rev() {
                            idx[d] += 1;
                            if idx[d] < s[d] {
                                break;
                            }
                            idx[d] = 0;
                        }
                    }
                    assert_eq!(l.device_bytes, (l.device_elems() * dt.size_bytes()) as u64);
                    let host: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
                    let dev = l.pack(&host);
                    assert_eq!(l.unpack(&dev), host, "{s:?}");
                    let nonzero = dev.iter().filter(|&&v| v != 0.0).count();
                    assert_eq!(nonzero, n, "padding must be zero for {s:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn i64_is_held_as_i32_and_bool_as_one_byte() {
        use crate::passes::tests::{graph_of, upto};
        let g = graph_of(
            r#"{"name": "x", "dtype": "f16", "shape": [6, 40]}"#,
            "",
            r#"{"name": "to_i", "op": "Cast", "inputs": ["x"], "outputs": ["i"], "attrs": {"to": "i64"}},
               {"name": "to_b", "op": "Cast", "inputs": ["x"], "outputs": ["b"], "attrs": {"to": "bool"}}"#,
            r#""i", "b""#,
        );
        let c = crate::compile(&g, &crate::Target::spyre32(), &upto("layout")).unwrap();
        assert_eq!(c.types["i"].dtype, DType::I64);
        let i = &c.layouts["i"];
        assert_eq!(i.dtype, DType::I32);
        assert_eq!(
            (i.elems_per_stick, i.device_size.clone()),
            (32, vec![2, 6, 32])
        );
        assert_eq!(c.layouts["x"].device_size, vec![1, 6, 64]);
        let b = &c.layouts["b"];
        assert_eq!(
            (b.elems_per_stick, b.device_size.clone()),
            (128, vec![1, 6, 128])
        );
        let text = &c.snapshot("layout").unwrap().text;
        assert!(
            text.contains("tensor i: i64[6,40] (output)\n  layout: i32[6,40] -> [2, 6, 32] strides [32, 40, 1], 1536 B  (i64 held as i32 on the device)"),
            "{text}"
        );
    }

    #[test]
    fn pack_tolerates_wrong_lengths() {
        let l = Layout::default_for(&[2, 3], DType::F16, 128).unwrap();
        assert_eq!(l.pack(&[1.0]).len(), l.device_elems());
        assert_eq!(l.unpack(&[]).len(), 6);
        assert_eq!(l.device_index_of(&[]), vec![0, 0, 0]);
    }

    /// The device offset of every row-major host position, in flat host order.
    fn offsets(l: &Layout) -> Vec<usize> {
        let mut out = Vec::new();
        l.for_each_host(|_, idx| out.push(l.device_offset_of(idx)));
        out
    }

    #[test]
    fn pack_puts_every_element_at_its_device_offset() {
        let shapes: [&[usize]; 9] = [
            &[],
            &[1],
            &[5],
            &[3, 130],
            &[2, 65, 3],
            &[70, 1, 65],
            &[2, 1, 3, 1, 65],
            &[2, 3, 4, 5, 6],
            &[4, 0, 3],
        ];
        let mut checked = 0;
        for s in shapes {
            for dt in [DType::F16, DType::F32, DType::I8] {
                let base = Layout::default_for(s, dt, 128).unwrap();
                let mut layouts = vec![base.clone()];
                if s.len() >= 2 {
                    layouts.push(base.with_padded_dim(s.len() - 2, 64).unwrap());
                }
                if s.len() >= 3 {
                    // A transpose that keeps the stick dim, held in the same bytes.
                    let mut perm: Vec<usize> = (0..s.len()).collect();
                    perm.swap(0, s.len() - 2);
                    if let Some(p) = base.permuted(&perm) {
                        layouts.push(p);
                    }
                }
                for l in layouts {
                    let n: usize = s.iter().product();
                    let host: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
                    let dev = l.pack(&host);
                    let offs = offsets(&l);
                    assert_eq!(offs.len(), n, "{s:?}");
                    for (i, &o) in offs.iter().enumerate() {
                        assert_eq!(dev[o], host[i], "{s:?} element {i} at {o}");
                    }
                    assert_eq!(l.unpack(&dev), host, "{s:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 60);
    }

    #[test]
    fn same_bytes_agrees_with_every_element_offset() {
        // Every pair of these shapes with equal element counts, in f16 (64 to a stick) and
        // i8 (128): the canonical comparison must never claim what the offsets deny, and
        // must find the reshapes that only regroup whole sticks.
        let shapes: &[&[usize]] = &[
            &[8, 256],
            &[8, 2, 128],
            &[8, 4, 64],
            &[1, 8, 4, 64],
            &[8, 1, 4, 64],
            &[8, 4, 1, 64],
            &[2, 4, 256],
            &[16, 128],
            &[2048],
            &[8, 8, 32],
            &[4, 2, 256],
            &[8, 256, 1],
            &[1, 2048],
            &[64, 32],
        ];
        for dtype in [DType::F16, DType::I8] {
            let mut found = 0;
            for a in shapes {
                for b in shapes {
                    let la = Layout::default_for(a, dtype, 128).unwrap();
                    let lb = Layout::default_for(b, dtype, 128).unwrap();
                    let same = offsets(&la) == offsets(&lb) && la.device_bytes == lb.device_bytes;
                    if la.same_bytes_as(&lb) {
                        assert!(same, "{a:?} and {b:?} ({dtype:?}) were called the same");
                        found += 1;
                    }
                }
            }
            assert!(found > shapes.len(), "only {found} pairs found the same");
        }
        let a = Layout::default_for(&[128, 4096], DType::F16, 128).unwrap();
        let b = Layout::default_for(&[128, 32, 128], DType::F16, 128).unwrap();
        assert!(a.same_bytes_as(&b) && b.same_bytes_as(&a));
        // Heads of 32 elements fill half a stick each: regrouping them moves bytes.
        let c = Layout::default_for(&[128, 128, 32], DType::F16, 128).unwrap();
        assert!(!a.same_bytes_as(&c));
    }

    #[test]
    fn a_layout_pulled_back_through_a_reshape_makes_it_move_nothing() {
        // (x, y): reshapes that merge x's dims, and some that split them (no pullback).
        let pairs: &[(&[usize], &[usize], bool)] = &[
            (&[1, 2, 4, 16, 128], &[1, 8, 16, 128], true),
            (&[2, 4, 16, 128], &[8, 16, 128], true),
            (&[16, 2, 128], &[16, 256], true),
            (&[4, 4, 2, 64], &[16, 128], true),
            (&[1, 16, 1, 2, 128], &[16, 256], true),
            (&[4, 4, 64], &[4, 2, 2, 64], false),
            (&[16, 256], &[16, 2, 128], false),
            (&[2, 4, 16, 100], &[8, 16, 100], false),
        ];
        for &(x, y, pulls) in pairs {
            let lx = Layout::default_for(x, DType::F16, 128).unwrap();
            let ly = Layout::default_for(y, DType::F16, 128).unwrap();
            let Some(l) = lx.pulled_back_from(&ly) else {
                assert!(!pulls, "{x:?} -> {y:?}: no pullback");
                continue;
            };
            assert!(pulls, "{x:?} -> {y:?}: a pullback through a split");
            assert_eq!(l.host_shape, x.to_vec());
            assert_eq!(offsets(&l), offsets(&ly), "{x:?} -> {y:?}: {l:?}");
            assert_eq!(l.device_bytes, ly.device_bytes);
            assert!(l.same_bytes_as(&ly));
            // Every host element on its own device slot, as any layout must.
            let mut seen = offsets(&l);
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), x.iter().product::<usize>());
            assert!(seen.iter().all(|&o| o < l.device_elems()));
        }
    }

    #[test]
    fn a_permuted_layout_holds_the_transpose_in_the_same_bytes() {
        let cases: &[(&[usize], &[usize], bool)] = &[
            (&[16, 2, 128], &[1, 0, 2], true),
            (&[1, 16, 4, 128], &[0, 2, 1, 3], true),
            (&[3, 5, 7, 100], &[2, 0, 1, 3], true),
            (&[4, 8, 64], &[1, 2, 0], false),
            (&[4, 8], &[1, 0], false),
        ];
        for &(shape, perm, keeps) in cases {
            let x = Layout::default_for(shape, DType::F16, 128).unwrap();
            let Some(y) = x.permuted(perm) else {
                assert!(!keeps, "{shape:?} by {perm:?}: no layout");
                continue;
            };
            assert!(keeps, "{shape:?} by {perm:?} moves the stick");
            let want: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
            assert_eq!(y.host_shape, want);
            assert_eq!(y.device_bytes, x.device_bytes);
            // Element x[i] is y[i permuted], at the same device offset.
            x.for_each_host(|_, idx| {
                let moved: Vec<usize> = perm.iter().map(|&d| idx[d]).collect();
                assert_eq!(x.device_offset_of(idx), y.device_offset_of(&moved));
            });
            // The stride map steps through y's row-major host order.
            y.for_each_host(|flat, idx| {
                let dev = y.device_index_of(idx);
                let by_strides: i64 = dev
                    .iter()
                    .zip(&y.stride_map)
                    .map(|(&i, &st)| i as i64 * st)
                    .sum();
                assert_eq!(by_strides, flat as i64, "{shape:?} by {perm:?} at {idx:?}");
            });
        }
        // A K-padded layout (matmul B) has gaps that depend on its shape: not permuted.
        let b = Layout::default_for(&[2, 100, 128], DType::F16, 128)
            .unwrap()
            .with_padded_dim(1, 64)
            .unwrap();
        assert!(b.permuted(&[1, 0, 2]).is_none());
    }
}
