//! Hand-off latency: from a holder's release completing to the next holder's grant, on a key
//! that had someone waiting when it was released. This is the figure that shows how a recipe
//! wakes its waiters (a watch fires, a poll comes round), which acquire latency alone hides.

use hdrhistogram::Histogram;
use lockbench_core::{History, KeyId, Nanos, OpF, OpType};
use std::collections::HashMap;

/// Hand-off latencies in microseconds, for releases within `[from, to]`.
pub fn latencies(history: &History, from: Nanos, to: Nanos) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
    let mut waiting: HashMap<KeyId, i64> = HashMap::new();
    let mut released_at: HashMap<KeyId, Nanos> = HashMap::new();
    for op in history.ops() {
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Invoke) => *waiting.entry(op.key).or_default() += 1,
            (OpF::Acquire, done) => {
                *waiting.entry(op.key).or_default() -= 1;
                if let Some(t) = released_at.remove(&op.key) {
                    if done == OpType::Ok && t >= from && op.time <= to {
                        let us = (op.time.saturating_sub(t).as_micros() as u64).max(1);
                        h.saturating_record(us);
                    }
                }
            }
            (OpF::Release, OpType::Ok) => {
                if waiting.get(&op.key).copied().unwrap_or(0) > 0 {
                    released_at.insert(op.key, op.time);
                } else {
                    released_at.remove(&op.key);
                }
            }
            _ => {}
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, Op};

    #[test]
    fn only_contended_releases_count() {
        let k = KeyId(0);
        let inv = |t, c| Op::invoke(Nanos(t), ClientId(c), OpF::Acquire, k);
        let ok = |t, c| {
            Op::complete(
                Nanos(t),
                ClientId(c),
                OpF::Acquire,
                k,
                OpType::Ok,
                None,
                None,
            )
        };
        let rel = |t, c| {
            Op::complete(
                Nanos(t),
                ClientId(c),
                OpF::Release,
                k,
                OpType::Ok,
                None,
                None,
            )
        };
        let h = History::from_unordered(vec![
            inv(0, 0),
            ok(1_000, 0),
            inv(2_000, 1),
            rel(10_000, 0),
            ok(13_000, 1), // contended: 3 µs
            rel(20_000, 1),
            inv(30_000, 0),
            ok(31_000, 0), // uncontended
        ]);
        let lat = latencies(&h, Nanos(0), Nanos(u64::MAX));
        assert_eq!(lat.len(), 1);
        assert_eq!(lat.max(), 3);
    }
}
