//! Fencing: what the protected resource did with stale tokens.
//!
//! The resource itself decides staleness atomically when a write arrives and records it on the
//! `write` op (`stale`), and whether it accepted the write (`ok`) or rejected it (`fail`). This
//! checker counts those decisions; writes without a token (Redlock) cannot be judged and are
//! counted separately.
//!
//! Fencing also rests on a premise the resource cannot check alone: every grant of a key gets a
//! token above every earlier grant's. A Redis failover that promotes a replica which never saw
//! the last `INCR`, or a Redis restarted empty, hands the same (or a lower) token out again, and
//! a resource that accepts an equal token then lets two holders through. So the checker also
//! walks the grants in completion order and counts every grant whose token is not above the
//! highest token granted on that key before it (`token_reuses`). In a correct run grants of one
//! key complete in token order: the next grant is only made after the previous holder released.

use crate::checker::{self, Checker, CheckerOutcome, Finding, Validity};
use crate::figures::Figures;
use lockbench_core::{FencingToken, FindingKind, History, KeyId, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// What the fencing checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencingReport {
    /// Writes carrying a token lower than one already seen, which the resource accepted.
    pub stale_writes_accepted: u64,
    /// When each accepted stale write happened; not serialized.
    #[serde(skip)]
    pub accepted_at: Vec<lockbench_core::Nanos>,
    /// Stale writes the resource rejected (the fencing token did its job).
    pub stale_writes_rejected: u64,
    /// When each rejected stale write happened; not serialized.
    #[serde(skip)]
    pub rejected_at: Vec<lockbench_core::Nanos>,
    /// Writes with no token at all: the resource could not tell stale from fresh.
    pub unfenced_writes: u64,
    /// All writes.
    pub writes: u64,
    /// Grants whose fencing token was not above every token granted earlier on the same key:
    /// the token was handed out twice (or went backwards), so the resource cannot tell the
    /// holders apart.
    pub token_reuses: u64,
    /// When each such grant completed; not serialized.
    #[serde(skip)]
    pub token_reused_at: Vec<lockbench_core::Nanos>,
}

/// The fencing checker as a stream over the history (see [`crate::checker`]).
#[derive(Default)]
pub struct FencingChecker {
    report: FencingReport,
    /// Per key, the highest token granted so far.
    highest: HashMap<KeyId, u64>,
}

impl Checker for FencingChecker {
    fn name(&self) -> &'static str {
        "fencing"
    }

    fn observe(&mut self, op: &Op) {
        let r = &mut self.report;
        match (op.f, op.ty) {
            (OpF::Write, ty) if ty != OpType::Invoke => {
                r.writes += 1;
                match (op.stale, ty) {
                    (None, _) => r.unfenced_writes += 1,
                    (Some(true), OpType::Ok) => {
                        r.stale_writes_accepted += 1;
                        r.accepted_at.push(op.time);
                    }
                    (Some(true), _) => {
                        r.stale_writes_rejected += 1;
                        r.rejected_at.push(op.time);
                    }
                    (Some(false), _) => {}
                }
            }
            (OpF::Acquire, OpType::Ok) => {
                let Some(FencingToken(token)) = op.token else {
                    return;
                };
                match self.highest.entry(op.key) {
                    Entry::Occupied(e) if *e.get() >= token => {
                        r.token_reuses += 1;
                        r.token_reused_at.push(op.time);
                    }
                    Entry::Occupied(mut e) => *e.get_mut() = token,
                    Entry::Vacant(e) => {
                        e.insert(token);
                    }
                }
            }
            _ => {}
        }
    }

    /// Invalid when the resource accepted a stale write or a token was granted twice.
    fn finish(self: Box<Self>) -> CheckerOutcome {
        let r = self.report;
        let validity = if r.stale_writes_accepted > 0 || r.token_reuses > 0 {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        let findings = Finding::all(FindingKind::StaleWriteAccepted, &r.accepted_at)
            .chain(Finding::all(FindingKind::TokenReuse, &r.token_reused_at))
            .chain(Finding::all(
                FindingKind::StaleWriteRejected,
                &r.rejected_at,
            ))
            .collect();
        let mut out = CheckerOutcome::new("fencing", validity, Figures::Fencing(r));
        out.findings = findings;
        out
    }
}

/// Counts the `write` ops of `history` and the reused tokens of its grants.
pub fn check(history: &History) -> FencingReport {
    let c = checker::feed_ops(FencingChecker::default(), history);
    c.report
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, Nanos};

    fn grant(t: u64, client: u32, key: u32, token: u64) -> Op {
        Op::complete(
            Nanos(t),
            ClientId(client),
            OpF::Acquire,
            KeyId(key),
            OpType::Ok,
            Some(FencingToken(token)),
            None,
        )
    }

    #[test]
    fn a_token_granted_twice_or_going_backwards_on_one_key_counts_as_reused() {
        let h = History::from_unordered(vec![
            grant(1, 0, 0, 21),
            grant(2, 1, 0, 22),
            grant(3, 2, 1, 5),  // another key: its own sequence
            grant(4, 2, 0, 22), // a promoted replica hands 22 out again
            grant(5, 0, 0, 3),  // a Redis restarted empty starts over
            grant(6, 1, 0, 23),
        ]);
        let r = check(&h);
        assert_eq!(r.token_reuses, 2);
        assert_eq!(r.token_reused_at, vec![Nanos(4), Nanos(5)]);
    }
}
