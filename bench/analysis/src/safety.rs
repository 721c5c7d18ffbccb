//! All safety checkers together, with one verdict.

use crate::fencing::{self, FencingReport};
use crate::lost::{self, LostReport};
use crate::mutex::{self, MutexReport};
use lockbench_core::History;
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

/// Runs every safety checker on `history`. A checker that panics makes the verdict
/// [`Validity::Unknown`] (never a pass).
pub fn check(history: &History) -> Safety {
    let mut failed = Vec::new();
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
