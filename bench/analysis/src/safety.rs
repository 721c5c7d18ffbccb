//! All safety checkers together, with one verdict.
//!
//! The verdict merges the outcomes of the run's checkers (see [`crate::checker`]) with `max`:
//! any violation makes it invalid, otherwise any checker that could not decide (it panicked,
//! or nothing was granted, [`NOTHING_GRANTED`]) makes it unknown. One exception: an
//! [`INSTRUMENT_FAULT`] (the resource judged a write otherwise than the history does,
//! [`crate::fencing_audit`]) makes it unknown even next to a violation: what an instrument that
//! cannot be trusted measured, damage included, is no verdict.

pub use crate::checker::Validity;
use crate::checker::{self, CheckerOutcome, Finding};
pub use crate::granted::NOTHING_GRANTED;
use lockbench_core::History;
use serde::Serialize;

/// How a checker's note starts when the instrument (the protected resource) is at fault.
pub const INSTRUMENT_FAULT: &str = "instrument fault";

/// The safety checkers' findings on one history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Safety {
    /// Overall verdict: invalid if any violation, unknown if a checker failed.
    pub verdict: Validity,
    /// Every checker's outcome, in the order the checkers ran.
    pub outcomes: Vec<CheckerOutcome>,
    /// Checkers that could not decide, with why (a panic message is prefixed by the checker's
    /// name).
    pub failed_checkers: Vec<String>,
}

impl Safety {
    /// Merges checker outcomes into one verdict.
    pub fn from_outcomes(outcomes: Vec<CheckerOutcome>) -> Safety {
        let instrument_fault = outcomes.iter().any(|o| {
            o.note
                .as_deref()
                .is_some_and(|n| n.starts_with(INSTRUMENT_FAULT))
        });
        let verdict = if instrument_fault {
            Validity::Unknown
        } else {
            let merged = outcomes.iter().map(|o| o.validity).max();
            merged.unwrap_or(Validity::Unknown)
        };
        let failed_checkers = outcomes.iter().filter_map(|o| o.note.clone()).collect();
        Safety {
            verdict,
            outcomes,
            failed_checkers,
        }
    }

    /// The outcome of the checker called `name`, if it ran.
    pub fn outcome(&self, name: &str) -> Option<&CheckerOutcome> {
        self.outcomes.iter().find(|o| o.name == name)
    }

    /// Every checker's violations with their times.
    pub fn findings(&self) -> impl Iterator<Item = Finding> + '_ {
        self.outcomes
            .iter()
            .flat_map(|o| o.findings.iter().copied())
    }
}

/// Runs the safety checkers ([`checker::safety_checkers`]) on an in-memory `history`. A checker
/// that panics makes the verdict [`Validity::Unknown`] (never a pass), and so does a history
/// in which no lock was ever granted ([`NOTHING_GRANTED`]).
pub fn check(history: &History) -> Safety {
    Safety::from_outcomes(checker::run_on_history(checker::safety_checkers(), history))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::{Figures, Reports};
    use lockbench_core::{ClientId, ErrorKind, KeyId, Nanos, Op, OpF, OpType};

    fn acquire(t: u64, client: u32, ty: OpType, error: Option<ErrorKind>) -> [Op; 2] {
        let (c, k) = (ClientId(client), KeyId(0));
        [
            Op::invoke(Nanos(t), c, OpF::Acquire, k),
            Op::complete(Nanos(t + 10), c, OpF::Acquire, k, ty, None, error),
        ]
    }

    /// Regression: servers that accepted connections and never answered gave a history of
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

    /// Regression: a resource that calls a stale write fresh made a run read "0 stale
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
        let s = check(&History::from_unordered(ops.clone()));
        assert_eq!(s.verdict, Validity::Invalid, "the overlap: {s:?}");
        // Client 0 writes its old token after 2 was accepted, and the resource calls it fresh.
        ops.extend(write(100, 0, 1, false));
        let s = check(&History::from_unordered(ops));
        assert_eq!(s.verdict, Validity::Unknown, "{s:?}");
        let fencing = s.outcomes.fencing().unwrap();
        assert_eq!(fencing.stale_writes_accepted, 0);
        let audit = s.outcomes.audit().unwrap();
        assert_eq!((audit.faults, audit.stale), (1, 1));
        assert!(
            s.failed_checkers
                .iter()
                .any(|c| c.starts_with(INSTRUMENT_FAULT) && c.contains("token 1")),
            "{:?}",
            s.failed_checkers
        );
    }

    /// A checker added to the set counts in the verdict like the built-in ones, and its
    /// figures are reachable by name.
    #[test]
    fn an_added_checker_joins_the_verdict() {
        struct AlwaysInvalid;
        impl crate::Checker for AlwaysInvalid {
            fn name(&self) -> &'static str {
                "always-invalid"
            }
            fn observe(&mut self, _op: &Op) {}
            fn finish(self: Box<Self>) -> CheckerOutcome {
                CheckerOutcome::new("always-invalid", Validity::Invalid, Figures::json(&[1, 2]))
            }
        }
        let h = History::from_unordered(acquire(0, 0, OpType::Ok, None).to_vec());
        let mut set = checker::safety_checkers();
        set.push(Box::new(AlwaysInvalid));
        let s = Safety::from_outcomes(checker::run_on_history(set, &h));
        assert_eq!(s.verdict, Validity::Invalid);
        assert_eq!(
            s.outcome("always-invalid").unwrap().figures,
            Figures::Json(serde_json::json!([1, 2]))
        );
        assert_eq!(s.outcomes.len(), checker::safety_checkers().len() + 1);
    }
}
