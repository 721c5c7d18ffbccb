//! Hand-off latency: from a holder's release completing to the grant of a client that was
//! already waiting for that key when it was released. This is the figure that shows how a
//! recipe wakes its waiters (a watch fires, a poll comes round), which acquire latency alone
//! hides. When the releaser itself (or a client that arrived after the release) gets the key
//! first, no hand-off to a waiter happened and nothing is recorded.

use hdrhistogram::Histogram;
use lockbench_core::{ClientId, History, KeyId, Nanos, OpF, OpType};
use std::collections::HashMap;

/// Hand-off latencies in microseconds, for releases within `[from, to]`.
pub fn latencies(history: &History, from: Nanos, to: Nanos) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
    // Outstanding acquires: (key, client) -> invoke time.
    let mut waiting: HashMap<(KeyId, ClientId), Nanos> = HashMap::new();
    // Last contended release per key: (time, releasing client).
    let mut released: HashMap<KeyId, (Nanos, ClientId)> = HashMap::new();
    for op in history.ops() {
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Invoke) => {
                waiting.insert((op.key, op.client), op.time);
            }
            (OpF::Acquire, done) => {
                let invoked = waiting.remove(&(op.key, op.client));
                if done != OpType::Ok {
                    continue;
                }
                if let (Some((t, releaser)), Some(invoked)) = (released.remove(&op.key), invoked) {
                    if releaser != op.client && invoked <= t && t >= from && op.time <= to {
                        let us = (op.time.saturating_sub(t).as_micros() as u64).max(1);
                        h.saturating_record(us);
                    }
                }
            }
            (OpF::Release, OpType::Ok) => {
                let contended = waiting.keys().any(|(k, c)| *k == op.key && *c != op.client);
                if contended {
                    released.insert(op.key, (op.time, op.client));
                } else {
                    released.remove(&op.key);
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
            inv(32_000, 1),
            rel(40_000, 0),
            inv(41_000, 0),
            ok(42_000, 0), // the releaser barges in: no hand-off
            rel(50_000, 0),
            ok(51_000, 1), // hand-off to the waiter: 1 µs
        ]);
        let lat = latencies(&h, Nanos(0), Nanos(u64::MAX));
        assert_eq!(lat.len(), 2);
        assert_eq!(lat.max(), 3);
        assert_eq!(lat.min(), 1);
    }
}
