//! Mutual exclusion: did two clients ever believe they held the same key at once?
//!
//! A client believes it holds a key from its acquire's `ok` until it invokes release. Whenever
//! two or more different clients believe it at once, mutual exclusion is broken. The checker
//! reports *episodes*: an episode starts with a grant made while another client still holds
//! the key, and lasts while any holder from before it remains. One paused holder whose lease
//! expired while a dozen others took turns is one episode, not a dozen; the number of grants
//! made into someone else's hold is reported beside it, and `overlap_ms` is the time the key
//! actually had more than one believed holder. Only definite grants count: an indeterminate (`info`) acquire
//! cannot prove a violation.
//!
//! An episode can be very short: with `hold = "0ms"` a holder's belief lasts only from its
//! grant to its release call, so a double grant by a broken recipe (two concurrent Redlock
//! rounds that both reach a quorum of 2 of 5) overlaps for microseconds. `overlap_ms` is
//! exact (nanoseconds); the report prints it in µs below a millisecond
//! (`lockbench_results::span`), where it once read "5 overlaps (0.0 ms with two holders)".

use crate::checker::{self, Checker, CheckerOutcome, Finding, Validity};
use crate::figures::Figures;
use lockbench_core::{ClientId, FindingKind, History, KeyId, Nanos, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What the mutual-exclusion checker found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MutexReport {
    /// Overlap episodes: stretches of time during which a key had two or more believed holders.
    pub violations: u64,
    /// Grants made while another client still believed it held the key.
    pub overlapping_grants: u64,
    /// Total time keys spent with more than one believed holder, in milliseconds.
    pub overlap_ms: f64,
    /// The longest single episode, in milliseconds.
    pub max_overlap_ms: f64,
    /// Releases that found the lock already gone (expired or taken over while held).
    pub locks_lost: u64,
    /// When each episode started, for attributing it to a fault window; not serialized.
    #[serde(skip)]
    pub times: Vec<Nanos>,
}

/// Per-key sweep state.
#[derive(Default)]
struct KeyState {
    /// Current believed holders and when each was granted.
    holders: Vec<(ClientId, Nanos)>,
    /// Start of the open episode, if any.
    episode_since: Option<Nanos>,
    /// Start of the current stretch with more than one distinct holder.
    multi_since: Option<Nanos>,
}

impl KeyState {
    fn distinct_holders(&self) -> usize {
        let mut seen: Vec<ClientId> = Vec::with_capacity(self.holders.len());
        for (c, _) in &self.holders {
            if !seen.contains(c) {
                seen.push(*c);
            }
        }
        seen.len()
    }

    /// An episode lasts while a holder from before it (the stale one) is still there: it ends
    /// when nobody holds the key, or the one holder left was granted during the episode.
    fn episode_over(&self, since: Nanos) -> bool {
        match self.distinct_holders() {
            0 => true,
            1 => self.holders.iter().all(|(_, granted)| *granted >= since),
            _ => false,
        }
    }
}

/// The mutual-exclusion checker as a stream over the history (see [`crate::checker`]).
#[derive(Default)]
pub struct MutexChecker {
    keys: HashMap<KeyId, KeyState>,
    report: MutexReport,
    /// The last op's time: an episode still open at the end lasts until then.
    end: Nanos,
}

impl MutexChecker {
    /// The report, closing episodes still open at the last op.
    pub fn report(mut self) -> MutexReport {
        for k in self.keys.values_mut() {
            if let Some(since) = k.multi_since.take() {
                add_overlap(&mut self.report, since, self.end);
            }
        }
        self.report
    }
}

impl Checker for MutexChecker {
    fn name(&self) -> &'static str {
        "mutex"
    }

    fn observe(&mut self, op: &Op) {
        self.end = op.time;
        let report = &mut self.report;
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                let k = self.keys.entry(op.key).or_default();
                if k.holders.iter().any(|(c, _)| *c != op.client) {
                    report.overlapping_grants += 1;
                }
                k.holders.push((op.client, op.time));
                if k.distinct_holders() > 1 {
                    k.multi_since.get_or_insert(op.time);
                    if k.episode_since.is_none() {
                        k.episode_since = Some(op.time);
                        report.violations += 1;
                        report.times.push(op.time);
                    }
                }
            }
            (OpF::Release, OpType::Invoke) => {
                if let Some(k) = self.keys.get_mut(&op.key) {
                    k.holders.retain(|(c, _)| *c != op.client);
                    if k.distinct_holders() <= 1
                        && let Some(since) = k.multi_since.take()
                    {
                        add_overlap(report, since, op.time);
                    }
                    if k.episode_since.is_some_and(|since| k.episode_over(since)) {
                        k.episode_since = None;
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

    /// Invalid on any overlap episode.
    fn finish(self: Box<Self>) -> CheckerOutcome {
        let r = self.report();
        let validity = if r.violations > 0 {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        let findings = Finding::all(FindingKind::Mutex, &r.times).collect();
        let mut out = CheckerOutcome::new("mutex", validity, Figures::Mutex(r));
        out.findings = findings;
        out
    }
}

/// Checks every key of `history`.
pub fn check(history: &History) -> MutexReport {
    let c = checker::feed_ops(MutexChecker::default(), history);
    c.report()
}

/// Adds one stretch of multiple holders to the totals.
fn add_overlap(report: &mut MutexReport, since: Nanos, until: Nanos) {
    let ms = until.saturating_sub(since).as_secs_f64() * 1e3;
    report.overlap_ms += ms;
    report.max_overlap_ms = report.max_overlap_ms.max(ms);
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn one_stale_holder_overlapping_many_grants_is_one_episode() {
        let ms = 1_000_000;
        // Client 0 holds from 0 to 10 ms (paused); clients 1 and 2 take turns meanwhile.
        let h = History::from_unordered(vec![
            ok(0, 0),
            ok(ms, 1),
            rel(2 * ms, 1),
            ok(3 * ms, 2),
            rel(4 * ms, 2),
            ok(5 * ms, 1),
            rel(6 * ms, 1),
            rel(10 * ms, 0),
        ]);
        let r = check(&h);
        assert_eq!(r.violations, 1, "one stale holder is one episode: {r:?}");
        assert_eq!(r.overlapping_grants, 3);
        assert!((r.overlap_ms - 3.0).abs() < 1e-9, "{r:?}");
        // The same without gaps between the others' holds: one long episode.
        let h = History::from_unordered(vec![
            ok(0, 0),
            ok(ms, 1),
            ok(2 * ms, 2),
            rel(3 * ms, 1),
            rel(4 * ms, 2),
            rel(10 * ms, 0),
        ]);
        let r = check(&h);
        assert_eq!(r.violations, 1, "{r:?}");
        assert_eq!(r.overlapping_grants, 2);
        assert!((r.overlap_ms - 3.0).abs() < 1e-9, "{r:?}");
    }

    /// Regression: a Redlock quorum of 2 of 5 in `quick` (`hold = "0ms"`) read "5 overlaps
    /// (0.0 ms with two holders, longest 0.0 ms)". The figures were right: two concurrent
    /// rounds both won within microseconds, and each client believed it held the key only from
    /// its grant to its release call, so each episode lasted a few µs. Five such episodes add
    /// up to their µs, exactly, and each counts once.
    #[test]
    fn episodes_of_microseconds_add_up_to_their_microseconds() {
        let us = 1_000;
        let mut ops = Vec::new();
        for i in 0..5u64 {
            let t = i * 1_000 * us;
            let (a, b) = (2 * i as u32, 2 * i as u32 + 1);
            // a's round wins at t, b's (on the other servers) 3 µs later; a writes and calls
            // release 8 µs after its grant, b 9 µs after its own.
            ops.extend([
                ok(t, a),
                ok(t + 3 * us, b),
                rel(t + 8 * us, a),
                rel(t + 12 * us, b),
            ]);
        }
        let r = check(&History::from_unordered(ops));
        assert_eq!((r.violations, r.overlapping_grants), (5, 5), "{r:?}");
        assert!((r.overlap_ms - 0.025).abs() < 1e-12, "{r:?}");
        assert!((r.max_overlap_ms - 0.005).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn other_keys_do_not_conflict() {
        let mut other = ok(2, 1);
        other.key = KeyId(1);
        let h = History::from_unordered(vec![ok(1, 0), other, rel(3, 0)]);
        assert_eq!(check(&h).violations, 0);
    }
}
