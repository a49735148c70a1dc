//! Element buffers recycled between tensor values.
//!
//! A kernel's loop makes the same few tile-sized tensors on every iteration and drops them
//! by the next one. Allocating each afresh costs more than filling it: the allocator
//! returns large blocks to the system and takes them back, and every page comes back
//! zeroed by a fault. Dropped tensors hand their buffers here instead ([`give`]), and the
//! kernels that make tensors start from one ([`take`]), so a loop runs over memory it
//! already has. Contents never carry over: a taken buffer is empty.

use std::cell::RefCell;

/// Buffers smaller than this many elements are left to the allocator, which serves them
/// well.
const MIN_ELEMENTS: usize = 4096;

/// Most buffers kept.
const MAX_BUFFERS: usize = 32;

/// Most elements kept over all buffers (128 MiB of f32), so a run's largest tensors are
/// not held past their use without bound.
const MAX_ELEMENTS: usize = 32 << 20;

/// The free buffers and their total capacity in elements.
#[derive(Default)]
struct Pool {
    free: Vec<Vec<f32>>,
    elements: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// An empty vector with room for at least `n` elements: the smallest kept buffer that
/// fits and is at most twice as large, else a new one. (Looser fits let small tiles take
/// the buffers of large ones, which then come from the allocator afresh every time.)
pub(crate) fn take(n: usize) -> Vec<f32> {
    if n >= MIN_ELEMENTS {
        let found = POOL.with(|p| {
            let mut p = p.borrow_mut();
            let best = p
                .free
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= n && v.capacity() / 2 <= n)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i)?;
            let v = p.free.swap_remove(best);
            p.elements -= v.capacity();
            Some(v)
        });
        if let Some(mut v) = found {
            v.clear();
            return v;
        }
    }
    Vec::with_capacity(n)
}

/// A copy of `xs` in a buffer from [`take`].
pub(crate) fn copy_of(xs: &[f32]) -> Vec<f32> {
    let mut v = take(xs.len());
    v.extend_from_slice(xs);
    v
}

/// Keeps `v`'s buffer for a later [`take`], when it is large enough to be worth it and
/// the pool has room; otherwise frees it.
pub(crate) fn give(v: Vec<f32>) {
    let cap = v.capacity();
    if cap < MIN_ELEMENTS {
        return;
    }
    // A pool being torn down at thread exit is simply not used.
    let _ = POOL.try_with(|p| {
        let Ok(mut p) = p.try_borrow_mut() else {
            return;
        };
        if p.free.len() < MAX_BUFFERS && p.elements + cap <= MAX_ELEMENTS {
            p.elements += cap;
            p.free.push(v);
        }
    });
}

/// Frees every kept buffer. A run calls it when its kernels are done, so a process or a
/// page that ran a large model does not hold the pool's memory until its next run.
pub fn release_pooled_buffers() {
    let _ = POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            *p = Pool::default();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_and_large_enough() {
        let mut v = take(10_000);
        v.extend(std::iter::repeat_n(1.5f32, 10_000));
        let ptr = v.as_ptr();
        give(v);
        let w = take(9_000);
        assert!(w.is_empty() && w.capacity() >= 9_000);
        assert_eq!(w.as_ptr(), ptr, "the kept buffer is reused");
        // Far smaller requests do not pin a large buffer.
        give(w);
        assert!(take(100).capacity() < 10_000);
    }

    #[test]
    fn releasing_the_pool_frees_every_kept_buffer() {
        give(take(10_000));
        POOL.with(|p| assert!(p.borrow().elements >= 10_000));
        release_pooled_buffers();
        POOL.with(|p| {
            let p = p.borrow();
            assert_eq!((p.free.len(), p.elements), (0, 0));
        });
    }
}
