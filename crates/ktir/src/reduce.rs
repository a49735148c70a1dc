//! The pipelining rule of `ktdp.inter_tile_reduce` toward one consumer, shared by the
//! simulator, which times the reduction with it, and the compiler's work-division cost
//! model, which prices a K split with it: one rule, so model and simulation agree.

/// How many pieces a reduce-to-one chain of `hops` sources cuts its `bytes` partial into:
/// four per hop, so the pieces move down the chain concurrently (every link carries the
/// partial once, and the last piece arrives `hops - 1` pieces after the first), but none
/// under 32 KiB, where the fixed cost of starting a transfer would eat the gain; a single
/// hop gains nothing from cutting.
pub fn reduce_pipeline_pieces(hops: u64, bytes: u64) -> u64 {
    if hops <= 1 {
        1
    } else {
        (bytes / (32 * 1024)).clamp(1, 4 * hops)
    }
}
