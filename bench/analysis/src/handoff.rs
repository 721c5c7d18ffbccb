//! Hand-off latency: from a holder's release completing to the grant of a client that was
//! already waiting for that key when it was released. This is the figure that shows how a
//! recipe wakes its waiters (a watch fires, a poll comes round), which acquire latency alone
//! hides. When the releaser itself (or a client that arrived after the release) gets the key
//! first, no hand-off to a waiter happened and nothing is recorded.

use hdrhistogram::Histogram;
use lockbench_core::{ClientId, History, KeyId, Nanos, Op, OpF, OpType};
use std::collections::HashMap;

/// Hand-off latencies as a stream over the time-ordered ops.
pub struct Handoffs {
    from: Nanos,
    to: Nanos,
    h: Histogram<u64>,
    /// Outstanding acquires: (key, client) -> invoke time.
    waiting: HashMap<(KeyId, ClientId), Nanos>,
    /// Last contended release per key: (time, releasing client).
    released: HashMap<KeyId, (Nanos, ClientId)>,
}

impl Handoffs {
    /// Counts hand-offs for releases within `[from, to]`.
    pub fn new(from: Nanos, to: Nanos) -> Self {
        Handoffs {
            from,
            to,
            h: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            waiting: HashMap::new(),
            released: HashMap::new(),
        }
    }

    /// Takes the next op.
    pub fn observe(&mut self, op: &Op) {
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Invoke) => {
                self.waiting.insert((op.key, op.client), op.time);
            }
            (OpF::Acquire, done) => {
                let invoked = self.waiting.remove(&(op.key, op.client));
                if done != OpType::Ok {
                    return;
                }
                if let (Some((t, releaser)), Some(invoked)) =
                    (self.released.remove(&op.key), invoked)
                    && releaser != op.client
                    && invoked <= t
                    && t >= self.from
                    && op.time <= self.to
                {
                    let us = (op.time.saturating_sub(t).as_micros() as u64).max(1);
                    self.h.saturating_record(us);
                }
            }
            (OpF::Release, OpType::Ok) => {
                let contended = self
                    .waiting
                    .keys()
                    .any(|(k, c)| *k == op.key && *c != op.client);
                if contended {
                    self.released.insert(op.key, (op.time, op.client));
                } else {
                    self.released.remove(&op.key);
                }
            }
            _ => {}
        }
    }

    /// The latencies, µs.
    pub fn finish(self) -> Histogram<u64> {
        self.h
    }
}

/// Hand-off latencies in microseconds, for releases within `[from, to]`.
pub fn latencies(history: &History, from: Nanos, to: Nanos) -> Histogram<u64> {
    let mut h = Handoffs::new(from, to);
    history.ops().iter().for_each(|op| h.observe(op));
    h.finish()
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
