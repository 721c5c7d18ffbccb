//! A scenario's expectations judged against its results, and the exit code that follows.
//!
//! Each expectation (`lockbench_core::expect`) ends `met`, `failed` or `unknown`, with the
//! figure it was judged on, and `results.json` keeps them all (`expectations`). The exit code
//! is derived from them alone, as Jepsen derives its own from `:valid?`: 1 when one failed
//! (an invalid verdict nobody expected is a failed implicit `safe`), else 2 when one could not
//! be judged (the backend did not run, its verdict is `unknown`, or the fault meant to break
//! it was never applied), else 0. An expectation about a result is only as good as the result:
//! an `unknown` verdict (a checker failed, nothing was granted, the instrument disagreed with
//! itself) makes every safety expectation on it `unknown`, never met.

use crate::model::{BackendResult, ExpectationResult};
use crate::{Status, Validity};
use lockbench_core::expect::{Expect, Expectations};
use serde::{Deserialize, Serialize};

/// How one expectation ended, ordered so that the worst is `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The results show what was expected.
    Met,
    /// They could not say (no result, no verdict, the fault was not applied).
    Unknown,
    /// They show the opposite.
    Failed,
}

impl Outcome {
    /// The name `results.json` uses.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::Unknown => "unknown",
            Outcome::Failed => "failed",
        }
    }
}

/// Judges every expectation of `expect` on `results` (the run's backends, in order).
pub fn evaluate(expect: &Expectations, results: &[BackendResult]) -> Vec<ExpectationResult> {
    let ran: Vec<String> = results.iter().map(|r| r.backend.clone()).collect();
    let resolved = expect.resolve(&ran);
    resolved
        .checks
        .iter()
        .map(|(backend, e)| {
            let r = results
                .iter()
                .find(|r| &r.backend == backend)
                .expect("resolved from these results");
            let (outcome, measured) = judge(e, r);
            ExpectationResult {
                backend: backend.clone(),
                expect: e.name().to_string(),
                implicit: matches!(e, Expect::Safe { implicit: true }),
                outcome,
                measured,
            }
        })
        .collect()
}

fn judge(e: &Expect, r: &BackendResult) -> (Outcome, String) {
    if r.status != Status::Ok {
        let why = r.error.as_deref().unwrap_or("");
        let status = r.status.name();
        return (Outcome::Unknown, format!("did not run: {status} {why}"));
    }
    if let Expect::MinThroughput(min) = e {
        let samples: Vec<f64> = if r.repetitions.is_empty() {
            vec![r.throughput_per_s]
        } else {
            r.repetitions.iter().map(|x| x.throughput_per_s).collect()
        };
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let outcome = if mean >= *min {
            Outcome::Met
        } else {
            Outcome::Failed
        };
        return (outcome, format!("{mean:.1} acq/s (at least {min})"));
    }
    let verdicts: Vec<Validity> = if r.repetitions.is_empty() {
        vec![r.safety.verdict]
    } else {
        r.repetitions.iter().map(|x| x.verdict).collect()
    };
    if verdicts.contains(&Validity::Unknown) {
        return (
            Outcome::Unknown,
            format!("no safety verdict: {}", r.safety.failed_checkers.join("; ")),
        );
    }
    let s = &r.safety;
    let kinds = || s.violated_kinds().join(", ");
    let nothing_applied = !r.fault_windows.is_empty() && r.fault_windows.iter().all(|w| !w.applied);
    let not_applied = || {
        (
            Outcome::Unknown,
            "no fault was applied, so nothing could break it".to_string(),
        )
    };
    let accepted = s.stale_writes_accepted + s.writes_after_lock_lost_accepted;
    let rejected =
        s.stale_writes_rejected + (s.writes_after_lock_lost - s.writes_after_lock_lost_accepted);
    match e {
        Expect::Safe { .. } => match verdicts.iter().find(|v| **v == Validity::Invalid) {
            None => (Outcome::Met, "valid".into()),
            Some(_) => (Outcome::Failed, format!("invalid: {}", kinds())),
        },
        Expect::Violated => match verdicts.iter().find(|v| **v != Validity::Invalid) {
            None => (Outcome::Met, format!("invalid: {}", kinds())),
            Some(_) if nothing_applied => not_applied(),
            Some(_) => (
                Outcome::Failed,
                "valid: no violation found (are the checkers alive?)".into(),
            ),
        },
        Expect::Fenced => {
            let figures =
                format!("{rejected} stale or lost-lock writes rejected, {accepted} accepted");
            match (accepted, rejected) {
                (0, 0) if nothing_applied => not_applied(),
                (0, 0) => (
                    Outcome::Failed,
                    format!("{figures}: fencing was never put to the test"),
                ),
                (0, _) => (Outcome::Met, figures),
                _ => (Outcome::Failed, figures),
            }
        }
        Expect::Damaged => {
            let figures = format!("{accepted} stale or lost-lock writes accepted");
            match accepted {
                0 if nothing_applied => not_applied(),
                0 => (Outcome::Failed, figures),
                _ => (Outcome::Met, figures),
            }
        }
        Expect::MinThroughput(_) => unreachable!("judged above"),
    }
}

/// The worst outcome of `results` (`None` when there are none).
pub fn worst(results: &[ExpectationResult]) -> Option<Outcome> {
    results.iter().map(|r| r.outcome).max()
}

/// The line printed for one expectation: `EXPECTATION MET: zk-fair fenced: ...`.
pub fn line(r: &ExpectationResult) -> String {
    let label = if r.implicit {
        format!("{} (implicit)", r.expect)
    } else {
        r.expect.clone()
    };
    format!(
        "EXPECTATION {}: {} {label}: {}",
        r.outcome.name().to_uppercase(),
        r.backend,
        r.measured
    )
}
