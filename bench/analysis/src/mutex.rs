//! Mutual exclusion: did two clients ever believe they held the same key at once?
//!
//! A client believes it holds a key from its acquire's `ok` until it invokes release. A grant
//! that arrives while another client still believes it holds the key is a violation; the
//! overlap lasts until the first of the two lets go. Only definite grants count: an
//! indeterminate (`info`) acquire cannot prove a violation.

use lockbench_core::{ClientId, History, KeyId, Nanos, OpF, OpType};
use serde::Serialize;
use std::collections::HashMap;

/// What the mutual-exclusion checker found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MutexReport {
    /// Grants made while another client still held the key.
    pub violations: u64,
    /// Total time two holders overlapped, summed over pairs, in milliseconds.
    pub overlap_ms: f64,
    /// The longest single overlap, in milliseconds.
    pub max_overlap_ms: f64,
    /// Releases that found the lock already gone (expired or taken over while held).
    pub locks_lost: u64,
    /// When each violation happened (the offending grant), for attributing it to a fault
    /// window; not serialized.
    #[serde(skip)]
    pub times: Vec<Nanos>,
}

/// Checks every key of `history`.
pub fn check(history: &History) -> MutexReport {
    let mut holders: HashMap<KeyId, Vec<(ClientId, Nanos)>> = HashMap::new();
    // Open overlaps: (key, a, b, since).
    let mut open: Vec<(KeyId, ClientId, ClientId, Nanos)> = Vec::new();
    let mut report = MutexReport::default();
    let close = |report: &mut MutexReport, since: Nanos, until: Nanos| {
        let ms = until.saturating_sub(since).as_secs_f64() * 1e3;
        report.overlap_ms += ms;
        report.max_overlap_ms = report.max_overlap_ms.max(ms);
    };
    for op in history.ops() {
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                let hs = holders.entry(op.key).or_default();
                if hs.iter().any(|(c, _)| *c != op.client) {
                    report.violations += 1;
                    report.times.push(op.time);
                    for (c, _) in hs.iter().filter(|(c, _)| *c != op.client) {
                        open.push((op.key, *c, op.client, op.time));
                    }
                }
                hs.push((op.client, op.time));
            }
            (OpF::Release, OpType::Invoke) => {
                if let Some(hs) = holders.get_mut(&op.key) {
                    hs.retain(|(c, _)| *c != op.client);
                }
                let mut i = 0;
                while i < open.len() {
                    let (k, a, b, since) = open[i];
                    if k == op.key && (a == op.client || b == op.client) {
                        close(&mut report, since, op.time);
                        open.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            (OpF::Release, OpType::Fail)
                if op.error == Some(lockbench_core::ErrorKind::LockLost) =>
            {
                report.locks_lost += 1;
            }
            _ => {}
        }
    }
    let end = history.ops().last().map(|o| o.time).unwrap_or_default();
    for (_, _, _, since) in open {
        close(&mut report, since, end);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Op;

    fn ok(t: u64, c: u32) -> Op {
        Op::complete(
            Nanos(t),
            ClientId(c),
            OpF::Acquire,
            KeyId(0),
            OpType::Ok,
            None,
            None,
        )
    }
    fn rel(t: u64, c: u32) -> Op {
        Op::invoke(Nanos(t), ClientId(c), OpF::Release, KeyId(0))
    }

    #[test]
    fn sequential_holds_are_valid() {
        let h = History::from_unordered(vec![ok(1, 0), rel(2, 0), ok(3, 1), rel(4, 1)]);
        assert_eq!(check(&h), MutexReport::default());
    }

    #[test]
    fn overlapping_holds_are_counted_with_their_overlap() {
        let ms = 1_000_000;
        let h = History::from_unordered(vec![
            ok(0, 0),
            ok(2 * ms, 1),
            rel(5 * ms, 0),
            rel(6 * ms, 1),
        ]);
        let r = check(&h);
        assert_eq!(r.violations, 1);
        assert!((r.overlap_ms - 3.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn other_keys_do_not_conflict() {
        let mut other = ok(2, 1);
        other.key = KeyId(1);
        let h = History::from_unordered(vec![ok(1, 0), other, rel(3, 0)]);
        assert_eq!(check(&h).violations, 0);
    }
}
