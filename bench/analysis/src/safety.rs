//! All safety checkers together, with one verdict.

use crate::fencing::{self, FencingReport};
use crate::lost::{self, LostReport};
use crate::mutex::{self, MutexReport};
use lockbench_core::{History, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A checker's verdict, ordered so that merging verdicts is `max` (Jepsen's priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    /// Nothing wrong found.
    Valid,
    /// The checker could not decide (it failed, or the history was unusable).
    Unknown,
    /// A violation was found.
    Invalid,
}

impl Validity {
    /// The word `results.json` uses (`valid`, `unknown`, `invalid`).
    pub fn name(self) -> &'static str {
        match self {
            Validity::Valid => "valid",
            Validity::Unknown => "unknown",
            Validity::Invalid => "invalid",
        }
    }
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

/// Why a history with no granted lock is [`Validity::Unknown`]: with nothing held, every
/// checker passes vacuously, and a backend whose servers never answered read "safety ok".
pub const NOTHING_GRANTED: &str = "no acquisition succeeded: nothing was checked";

/// Runs every safety checker on `history`. A checker that panics makes the verdict
/// [`Validity::Unknown`] (never a pass), and so does a history in which no lock was ever
/// granted ([`NOTHING_GRANTED`]): zero acquisitions is never "safe".
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
    let violation = mutex.as_ref().is_some_and(|m| m.violations > 0)
        || fencing
            .as_ref()
            .is_some_and(|f| f.stale_writes_accepted > 0 || f.token_reuses > 0);
    let verdict = if violation {
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
