//! Storage: DRAM buffers and byte-addressed scratchpads, and the element reads and writes
//! over them. Only the numbers domain reads or writes contents; the shapes-only domain
//! leaves them empty.

use crate::timing::DramAccess;
use crate::value::{round_slice, round_to};
use half::{bf16, f16};
use ktir::ast::ScalarType;

/// A named region of DRAM.
#[derive(Clone, Debug)]
pub struct DramBuffer {
    /// The buffer's name (a function argument or graph tensor).
    pub name: String,
    /// First element address.
    pub base: i64,
    /// Element type.
    pub elem: ScalarType,
    /// Size in elements.
    pub len: usize,
    /// Contents, as f32 values already rounded to `elem`; empty in timing-only mode.
    pub data: Vec<f32>,
}

/// Where one element lives.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    /// Element `idx` of DRAM buffer `buf`.
    Dram { buf: usize, idx: usize },
    /// Byte `byte` of core `core`'s scratchpad.
    Local { core: usize, byte: usize },
}

/// Stores `x` as `elem` in little-endian bytes.
pub(crate) fn encode(elem: ScalarType, x: f32, out: &mut [u8]) {
    fn put<const N: usize>(out: &mut [u8], bytes: [u8; N]) {
        for (o, b) in out.iter_mut().zip(bytes) {
            *o = b;
        }
    }
    match elem {
        ScalarType::F16 => put(out, f16::from_f32(x).to_le_bytes()),
        ScalarType::BF16 => put(out, bf16::from_f32(x).to_le_bytes()),
        ScalarType::F32 => put(out, x.to_le_bytes()),
        ScalarType::F64 => put(out, (x as f64).to_le_bytes()),
        // fp8: the high byte of the fp16 pattern (exact for e5m2; an approximation for e4m3).
        ScalarType::F8E4M3 | ScalarType::F8E5M2 => put(out, [f16::from_f32(x).to_le_bytes()[1]]),
        ScalarType::I1 | ScalarType::I8 => put(out, [(x as i64) as u8]),
        ScalarType::I16 => put(out, ((x as i64) as i16).to_le_bytes()),
        ScalarType::I32 => put(out, ((x as i64) as i32).to_le_bytes()),
        ScalarType::I64 | ScalarType::Index => put(out, (x as i64).to_le_bytes()),
    }
}

/// Reads an `elem` from little-endian bytes (missing bytes read as zero).
pub(crate) fn decode(elem: ScalarType, b: &[u8]) -> f32 {
    let g = |i: usize| b.get(i).copied().unwrap_or(0);
    match elem {
        ScalarType::F16 => f16::from_le_bytes([g(0), g(1)]).to_f32(),
        ScalarType::BF16 => bf16::from_le_bytes([g(0), g(1)]).to_f32(),
        ScalarType::F32 => f32::from_le_bytes([g(0), g(1), g(2), g(3)]),
        ScalarType::F64 => {
            f64::from_le_bytes([g(0), g(1), g(2), g(3), g(4), g(5), g(6), g(7)]) as f32
        }
        ScalarType::F8E4M3 | ScalarType::F8E5M2 => f16::from_le_bytes([0, g(0)]).to_f32(),
        ScalarType::I1 => (g(0) & 1) as f32,
        ScalarType::I8 => g(0) as i8 as f32,
        ScalarType::I16 => i16::from_le_bytes([g(0), g(1)]) as f32,
        ScalarType::I32 => i32::from_le_bytes([g(0), g(1), g(2), g(3)]) as f32,
        ScalarType::I64 | ScalarType::Index => {
            i64::from_le_bytes([g(0), g(1), g(2), g(3), g(4), g(5), g(6), g(7)]) as f32
        }
    }
}

/// DRAM and the scratchpads.
pub(crate) struct Memory {
    /// Named DRAM buffers, in allocation order (add them with [`Memory::push_dram`]).
    pub dram: Vec<DramBuffer>,
    /// Byte-addressed scratchpad contents per core (grown on demand).
    pub scratchpads: Vec<Vec<u8>>,
    /// Whether `dram` is in address order without overlaps, so lookups by address can
    /// bisect rather than scan every buffer (a model has thousands).
    pub dram_sorted: bool,
}

impl Memory {
    /// Adds a DRAM buffer after the others.
    pub(crate) fn push_dram(&mut self, b: DramBuffer) {
        if let Some(last) = self.dram.last() {
            let end = last.base.saturating_add(last.len as i64);
            self.dram_sorted &= b.base >= end;
        }
        self.dram.push(b);
    }

    /// The first buffer, in allocation order, holding element address `addr`.
    pub(crate) fn dram_containing(&self, addr: i64) -> Option<usize> {
        let holds = |b: &DramBuffer| addr >= b.base && addr < b.base + b.len as i64;
        if !self.dram_sorted {
            return self.dram.iter().position(holds);
        }
        // Sorted and disjoint: only the last buffer starting at or before `addr` that has
        // elements can hold it (empty ones hold nothing).
        let after = self.dram.partition_point(|b| b.base <= addr);
        self.dram[..after]
            .iter()
            .rposition(|b| b.len > 0)
            .filter(|&i| holds(&self.dram[i]))
    }

    /// The last buffer, in allocation order, starting at or before `base`: the one a view
    /// at `base` belongs to.
    pub(crate) fn dram_home(&self, base: i64) -> Option<usize> {
        if !self.dram_sorted {
            return self.dram.iter().rposition(|h| h.base <= base);
        }
        self.dram.partition_point(|b| b.base <= base).checked_sub(1)
    }
    pub(crate) fn read_loc(&self, loc: Loc, elem: ScalarType) -> f32 {
        match loc {
            Loc::Dram { buf, idx } => self.dram[buf].data.get(idx).copied().unwrap_or(0.0),
            Loc::Local { core, byte } => {
                let pad = &self.scratchpads[core];
                let n = elem.size_bytes();
                decode(
                    elem,
                    pad.get(byte..(byte + n).min(pad.len())).unwrap_or(&[]),
                )
            }
        }
    }

    pub(crate) fn write_loc(&mut self, loc: Loc, elem: ScalarType, x: f32) {
        match loc {
            Loc::Dram { buf, idx } => {
                if let Some(v) = self.dram[buf].data.get_mut(idx) {
                    *v = round_to(elem, x);
                }
            }
            Loc::Local { core, byte } => {
                let n = elem.size_bytes();
                let pad = &mut self.scratchpads[core];
                if pad.len() < byte + n {
                    pad.resize(byte + n, 0);
                }
                encode(elem, x, &mut pad[byte..byte + n]);
            }
        }
    }

    /// Reads a span's elements in enumeration order.
    pub(crate) fn read_span(&self, span: &Span, elem: ScalarType, n: usize) -> Vec<f32> {
        let mut data = crate::pool::take(n);
        match span.place {
            Place::Dram(bi) => {
                let b = &self.dram[bi];
                walk_runs(span, |_, addr, len, step| {
                    let start = (addr - b.base) as usize;
                    match b
                        .data
                        .get(start..start.saturating_add(len))
                        .filter(|_| step == 1)
                    {
                        Some(run) => data.extend_from_slice(run),
                        None => {
                            for i in 0..len as i64 {
                                let at = (addr + i * step - b.base) as usize;
                                data.push(b.data.get(at).copied().unwrap_or(0.0));
                            }
                        }
                    }
                });
            }
            Place::Local(core) => {
                let size = elem.size_bytes();
                walk_span(span, |_, addr| {
                    let byte = addr as usize * size;
                    data.push(self.read_loc(Loc::Local { core, byte }, elem))
                });
            }
        }
        data
    }

    /// Writes `values` (enumeration order) over a span.
    pub(crate) fn write_span(&mut self, span: &Span, elem: ScalarType, values: &[f32]) {
        match span.place {
            Place::Dram(bi) => {
                let b = &mut self.dram[bi];
                let base = b.base;
                let data = &mut b.data;
                walk_runs(span, |k, addr, len, step| {
                    let start = (addr - base) as usize;
                    let run = data.get_mut(start..start.saturating_add(len));
                    match (run, values.get(k..k + len)) {
                        (Some(run), Some(xs)) if step == 1 => {
                            run.copy_from_slice(xs);
                            round_slice(elem, run);
                        }
                        _ => {
                            for i in 0..len {
                                let at = (addr + i as i64 * step - base) as usize;
                                if let (Some(slot), Some(x)) = (data.get_mut(at), values.get(k + i))
                                {
                                    *slot = round_to(elem, *x);
                                }
                            }
                        }
                    }
                });
            }
            Place::Local(core) => {
                let size = elem.size_bytes();
                let pad = &mut self.scratchpads[core];
                let need = (span.end as usize + 1) * size;
                if pad.len() < need {
                    pad.resize(need, 0);
                }
                walk_span(span, |k, addr| {
                    let byte = addr as usize * size;
                    if let Some(x) = values.get(k) {
                        encode(elem, *x, &mut pad[byte..byte + size]);
                    }
                });
            }
        }
    }
}

/// Where a box span lands.
pub(crate) enum Place {
    /// DRAM buffer index.
    Dram(usize),
    /// The scratchpad of this core.
    Local(usize),
}

/// A box tile's addresses: `first`, then per enumeration loop (outermost first) its
/// extent and address step.
pub(crate) struct Span {
    pub place: Place,
    pub first: i64,
    pub loops: Vec<(usize, i64)>,
    /// The largest address.
    pub end: i64,
    pub stop: (usize, DramAccess),
}

/// Calls `f(k, address, len, step)` for each innermost run of the span, in enumeration
/// order: points `k..k + len` at addresses `address + i * step`. The address arithmetic
/// is done once per run, so a contiguous run (`step == 1`) is copied as a slice.
pub(crate) fn walk_runs(span: &Span, mut f: impl FnMut(usize, i64, usize, i64)) {
    let Some((&(inner_n, inner_step), outer)) = span.loops.split_last() else {
        f(0, span.first, 1, 1);
        return;
    };
    let rows: usize = outer.iter().map(|l| l.0).product();
    let mut idx = vec![0usize; outer.len()];
    let mut row_start = span.first;
    for r in 0..rows {
        f(r * inner_n, row_start, inner_n, inner_step);
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            row_start += outer[d].1;
            if idx[d] < outer[d].0 {
                break;
            }
            row_start -= outer[d].1 * outer[d].0 as i64;
            idx[d] = 0;
        }
    }
}

/// Calls `f(k, address)` for the span's points in enumeration order.
pub(crate) fn walk_span(span: &Span, mut f: impl FnMut(usize, i64)) {
    let Some((&(inner_n, inner_step), outer)) = span.loops.split_last() else {
        f(0, span.first);
        return;
    };
    let rows: usize = outer.iter().map(|l| l.0).product();
    let mut idx = vec![0usize; outer.len()];
    let mut row_start = span.first;
    let mut k = 0;
    for _ in 0..rows {
        let mut a = row_start;
        for _ in 0..inner_n {
            f(k, a);
            k += 1;
            a += inner_step;
        }
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            row_start += outer[d].1;
            if idx[d] < outer[d].0 {
                break;
            }
            row_start -= outer[d].1 * outer[d].0 as i64;
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_per_type() {
        for (t, x) in [
            (ScalarType::F16, 1.5f32),
            (ScalarType::BF16, -2.0),
            (ScalarType::F32, 3.25),
            (ScalarType::I32, -7.0),
            (ScalarType::I8, -3.0),
            (ScalarType::I1, 1.0),
            (ScalarType::Index, 123456.0),
        ] {
            let mut b = vec![0u8; t.size_bytes()];
            encode(t, x, &mut b);
            assert_eq!(decode(t, &b), x, "{t:?}");
        }
    }
}
