//! Writes from a holder whose lock was already gone (Kleppmann's damage, seen from the lock).
//!
//! The fencing checker asks the *resource* whether a token was stale; this one asks the *lock
//! history*: a write by client A on key k counts when another client was granted k after A's
//! own latest grant on k and before A's write. By then A's lock had expired (or been taken
//! over) whatever A believed, so its write happened outside mutual exclusion. The figure does
//! not depend on tokens, so it is the one that shows Redlock's damage (Redlock has no token for
//! the resource to check) and it counts a write even when the resource happened to accept it
//! because no newer holder had written yet.

use crate::checker::{self, Checker, CheckerOutcome, Finding, Validity};
use crate::figures::Figures;
use lockbench_core::{ClientId, FindingKind, History, KeyId, Op, OpF, OpType};
use std::collections::HashMap;

/// Writes made after another client's later grant on the same key, and how many of those the
/// resource accepted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LostReport {
    /// Writes by a client whose lock had been granted to another client since its own grant.
    pub writes_after_lock_lost: u64,
    /// Of those, the writes the resource accepted.
    pub accepted: u64,
    /// When each accepted one happened (damage); not serialized.
    #[serde(skip)]
    pub accepted_at: Vec<lockbench_core::Nanos>,
    /// When each rejected one happened (fencing did its job); not serialized.
    #[serde(skip)]
    pub rejected_at: Vec<lockbench_core::Nanos>,
}

/// The lost-lock checker as a stream over the history (see [`crate::checker`]).
#[derive(Default)]
pub struct LostChecker {
    /// Per key, the client of its latest grant.
    last_grant: HashMap<KeyId, ClientId>,
    report: LostReport,
}

impl Checker for LostChecker {
    fn name(&self) -> &'static str {
        "lost"
    }

    fn observe(&mut self, op: &Op) {
        let r = &mut self.report;
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                self.last_grant.insert(op.key, op.client);
            }
            (OpF::Write, OpType::Ok | OpType::Fail)
                if self
                    .last_grant
                    .get(&op.key)
                    .is_some_and(|c| *c != op.client) =>
            {
                r.writes_after_lock_lost += 1;
                if op.ty == OpType::Ok {
                    r.accepted += 1;
                    r.accepted_at.push(op.time);
                } else {
                    r.rejected_at.push(op.time);
                }
            }
            _ => {}
        }
    }

    /// Always valid: a write after the lock was lost is damage *evidence* whose cause the
    /// mutual-exclusion checker (the writer still believed it held the key while another was
    /// granted it) and the fencing checker (the resource accepted it stale) judge. Its
    /// findings still go to the scorecard.
    fn finish(self: Box<Self>) -> CheckerOutcome {
        let r = self.report;
        let findings = Finding::all(FindingKind::WriteAfterLockLostAccepted, &r.accepted_at)
            .chain(Finding::all(
                FindingKind::WriteAfterLockLostRejected,
                &r.rejected_at,
            ))
            .collect();
        let mut out = CheckerOutcome::new("lost", Validity::Valid, Figures::Lost(r));
        out.findings = findings;
        out
    }
}

/// Checks every `write` of `history` against the grants before it.
pub fn check(history: &History) -> LostReport {
    let c = checker::feed_ops(LostChecker::default(), history);
    c.report
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Nanos;

    fn op(t: u64, c: u32, f: OpF, ty: OpType) -> Op {
        Op::complete(Nanos(t), ClientId(c), f, KeyId(0), ty, None, None)
    }

    #[test]
    fn a_write_after_someone_elses_later_grant_counts() {
        let h = History::from_unordered(vec![
            op(1, 0, OpF::Acquire, OpType::Ok),
            op(2, 0, OpF::Write, OpType::Ok), // fine: still the latest grant
            op(3, 1, OpF::Acquire, OpType::Ok),
            op(4, 1, OpF::Write, OpType::Ok),
            op(5, 0, OpF::Write, OpType::Fail), // client 0's lock is gone
        ]);
        assert_eq!(
            check(&h),
            LostReport {
                writes_after_lock_lost: 1,
                accepted: 0,
                accepted_at: vec![],
                rejected_at: vec![Nanos(5)],
            }
        );
    }
}
