//! All safety checkers together, with one verdict.

use crate::fencing::{self, FencingReport};
use crate::fencing_audit::{self, AuditReport};
use crate::lost::{self, LostReport};
use crate::mutex::{self, MutexReport};
use lockbench_core::{History, OpF, OpType};
use serde::Serialize;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A checker's verdict, ordered so that merging verdicts is `max` (Jepsen's priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    /// Nothing wrong found.
    Valid,
    /// The checker could not decide (it failed, or the history was unusable).
    Unknown,
    /// A violation was found.
    Invalid,
}

/// The safety checkers' findings on one history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Safety {
    /// Overall verdict: invalid if any violation, unknown if a checker failed.
    pub verdict: Validity,
    /// Mutual exclusion.
    pub mutex: Option<MutexReport>,
    /// Fencing at the protected resource.
    pub fencing: Option<FencingReport>,
    /// Writes by holders whose lock was already gone.
    pub lost: Option<LostReport>,
    /// Staleness recomputed from the history: writes the resource judged otherwise are
    /// instrument faults.
    pub audit: Option<AuditReport>,
    /// Checkers that failed, with their panic message.
    pub failed_checkers: Vec<String>,
}

fn guarded<T>(name: &str, failed: &mut Vec<String>, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panicked".into());
            failed.push(format!("{name}: {msg}"));
            None
        }
    }
}

/// How an instrument fault starts its `failed_checkers` entry (and its printed line).
pub const INSTRUMENT_FAULT: &str = "instrument fault";

/// Why a history with no granted lock is [`Validity::Unknown`]: with nothing held, every
/// checker passes vacuously, and a backend whose servers never answered read "safety ok".
pub const NOTHING_GRANTED: &str = "no acquisition succeeded: nothing was checked";

/// Runs every safety checker on `history`. A checker that panics makes the verdict
/// [`Validity::Unknown`] (never a pass), and so does a history in which no lock was ever
/// granted ([`NOTHING_GRANTED`]): zero acquisitions is never "safe". An instrument fault (the
/// resource judged a write otherwise than the history does, [`fencing_audit`]) makes it
/// `Unknown` even when a violation was found: what an untrustworthy instrument measured,
/// damage included, cannot be a verdict.
pub fn check(history: &History) -> Safety {
    let mut failed = Vec::new();
    let granted = history
        .ops()
        .iter()
        .any(|op| op.ty == OpType::Ok && matches!(op.f, OpF::Acquire | OpF::AcquireShared));
    if !granted {
        failed.push(NOTHING_GRANTED.to_string());
    }
    let mutex = guarded("mutex", &mut failed, || mutex::check(history));
    let fencing = guarded("fencing", &mut failed, || fencing::check(history));
    let lost = guarded("lost", &mut failed, || lost::check(history));
    let audit = guarded("fencing audit", &mut failed, || {
        fencing_audit::check(history)
    });
    let instrument_fault = audit.as_ref().is_some_and(|a| a.faults > 0);
    if let Some(a) = audit.as_ref().filter(|a| a.faults > 0) {
        failed.push(format!(
            "{INSTRUMENT_FAULT}: the resource judged {} of {} writes otherwise than the history \
             does (first: {})",
            a.faults,
            a.judged,
            a.examples.join("; ")
        ));
    }
    let violation = mutex.as_ref().is_some_and(|m| m.violations > 0)
        || fencing
            .as_ref()
            .is_some_and(|f| f.stale_writes_accepted > 0 || f.token_reuses > 0);
    let verdict = if instrument_fault {
        Validity::Unknown
    } else if violation {
        Validity::Invalid
    } else if !failed.is_empty() {
        Validity::Unknown
    } else {
        Validity::Valid
    };
    Safety {
        verdict,
        mutex,
        fencing,
        lost,
        audit,
        failed_checkers: failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, ErrorKind, KeyId, Nanos, Op};

    fn acquire(t: u64, client: u32, ty: OpType, error: Option<ErrorKind>) -> [Op; 2] {
        let (c, k) = (ClientId(client), KeyId(0));
        [
            Op::invoke(Nanos(t), c, OpF::Acquire, k),
            Op::complete(Nanos(t + 10), c, OpF::Acquire, k, ty, None, error),
        ]
    }

    /// Issue 11 item 1: a resource that calls a stale write fresh made a run read "0 stale
    /// writes accepted". The audit's disagreement makes the verdict unknown, even next to a
    /// violation found by another checker.
    #[test]
    fn a_resource_that_misjudges_a_write_makes_the_verdict_unknown() {
        use lockbench_core::FencingToken;
        let write = |t: u64, client: u32, token: u64, stale: bool| {
            let c = ClientId(client);
            let mut done = Op::complete(
                Nanos(t + 5),
                c,
                OpF::Write,
                KeyId(0),
                OpType::Ok,
                Some(FencingToken(token)),
                None,
            );
            done.stale = Some(stale);
            [Op::invoke(Nanos(t), c, OpF::Write, KeyId(0)), done]
        };
        let grant = |t: u64, client: u32| {
            let mut g = acquire(t, client, OpType::Ok, None);
            g[1].token = Some(FencingToken(client as u64 + 1));
            g
        };
        let mut ops: Vec<Op> = grant(0, 0).to_vec();
        ops.extend(write(20, 0, 1, false));
        ops.extend(grant(30, 1));
        ops.extend(write(50, 1, 2, false));
        let honest = ops.clone();
        let s = check(&History::from_unordered(honest));
        assert_eq!(s.verdict, Validity::Invalid, "the overlap: {s:?}");
        // Client 0 writes its old token after 2 was accepted, and the resource calls it fresh.
        ops.extend(write(100, 0, 1, false));
        let s = check(&History::from_unordered(ops));
        assert_eq!(s.verdict, Validity::Unknown, "{s:?}");
        assert_eq!(s.fencing.as_ref().unwrap().stale_writes_accepted, 0);
        assert_eq!(s.audit.as_ref().unwrap().faults, 1);
        assert!(
            s.failed_checkers
                .iter()
                .any(|c| c.starts_with(INSTRUMENT_FAULT) && c.contains("token 1")),
            "{:?}",
            s.failed_checkers
        );
    }

    /// Issue 11 item 8: servers that accepted connections and never answered gave a history of
    /// timed-out acquires, which every checker passed: "safety ok" with 0 acquisitions.
    #[test]
    fn a_history_without_a_grant_is_unknown_never_valid() {
        let timeouts: Vec<Op> = (0..3)
            .flat_map(|i| acquire(i * 100, i as u32, OpType::Info, Some(ErrorKind::Timeout)))
            .collect();
        let s = check(&History::from_unordered(timeouts));
        assert_eq!(s.verdict, Validity::Unknown);
        assert_eq!(s.failed_checkers, vec![NOTHING_GRANTED.to_string()]);
        assert_eq!(
            check(&History::from_unordered(Vec::new())).verdict,
            Validity::Unknown
        );

        let mut one = acquire(0, 0, OpType::Ok, None).to_vec();
        one.extend(acquire(100, 1, OpType::Info, Some(ErrorKind::Timeout)));
        let s = check(&History::from_unordered(one));
        assert_eq!(s.verdict, Validity::Valid, "{s:?}");
        assert!(s.failed_checkers.is_empty());
    }
}
