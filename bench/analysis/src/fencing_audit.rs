//! The fencing audit: staleness recomputed from the history, independently of the resource.
//!
//! The fencing checker ([`crate::fencing`]) counts the `stale` flag the protected resource put
//! on each write. A resource that misjudges (a wrong comparison, a lost update of its highest
//! token) would then read "0 stale writes accepted" exactly as a correct one does. This
//! checker judges every tokened write again from the history alone and reports each write the
//! resource judged otherwise as an *instrument fault*, which makes the run's verdict `unknown`
//! (the instrument cannot be trusted, so neither can what it measured).
//!
//! # The rule
//!
//! A write carries token `t` on key `k` and spans `[invoke, completion]` (the resource decided
//! somewhere inside). It is stale when the resource had already *accepted* a write on `k` with
//! a higher token (equal tokens are the same grant: not stale). Against another accepted write
//! `W'` with token `t' > t`:
//!
//! - `W'` completed before this write was invoked: the resource certainly decided `W'` first,
//!   so this write is **certainly stale**;
//! - `W'` was invoked after this write completed: certainly decided after, no effect;
//! - otherwise the two were concurrent: `W'` may have been decided before or after.
//!
//! So a write is certainly stale when some higher accepted write completed before it began,
//! certainly fresh when every higher accepted write began after it ended, and *ambiguous*
//! otherwise. A fault is a `stale = false` on a certainly stale write (damage hidden: the
//! failure mode this audit exists for), a `stale = true` on a certainly fresh one, or a
//! rejection (`fail`) of a certainly fresh one (a fencing resource only rejects stale writes).
//! Ambiguous writes can take either flag and are only counted. Writes without a token are not
//! judged (the resource cannot judge them either), and a write recorded without its `invoke`
//! (a history from before writes had one) spans just its completion instant.
//!
//! Streaming (see [`crate::checker`]): per key it keeps the highest token of the accepted writes
//! completed so far, the writes still open, and the completed writes that wait for open ones
//! to end before they can be told fresh from ambiguous: memory bounded by the writes in flight,
//! never by the history's length. A write still waiting when the history ends (its concurrent
//! write never completed) is ambiguous.

use crate::checker::{self, Checker, CheckerOutcome, Validity};
use crate::figures::Figures;
use lockbench_core::{ClientId, History, KeyId, Nanos, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How many faults are described in words (all are counted).
pub const EXAMPLES: usize = 3;

/// The checker's name (its outcome is `safety.checks.fencing_audit` in `results.json`).
pub const NAME: &str = "fencing_audit";

/// What the audit found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditReport {
    /// Writes with a token that were judged.
    pub judged: u64,
    /// Of those, certainly stale by the history.
    pub stale: u64,
    /// Of those, concurrent with a higher accepted write: either flag is consistent.
    pub ambiguous: u64,
    /// Writes the resource judged otherwise than the history: instrument faults.
    pub faults: u64,
    /// The first few faults, in words.
    pub examples: Vec<String>,
}

/// A completed write, as the audit judges it.
#[derive(Clone, Copy, Debug)]
struct Done {
    client: ClientId,
    completed: Nanos,
    token: u64,
    accepted: bool,
    stale: Option<bool>,
}

/// A completed write that may be fresh, waiting for the writes open when it completed.
struct Waiting {
    write: Done,
    on: Vec<ClientId>,
}

#[derive(Default)]
struct KeyState {
    /// The highest token among the accepted writes completed so far.
    done_max: u64,
    /// Open writes: `done_max` when each was invoked.
    open: HashMap<ClientId, u64>,
    waiting: Vec<Waiting>,
}

/// The audit as a stream over the history.
#[derive(Default)]
pub struct AuditChecker {
    keys: HashMap<KeyId, KeyState>,
    report: AuditReport,
}

/// What the history says of one write.
enum Judgement {
    Stale { higher: u64 },
    Fresh,
    Ambiguous,
}

impl AuditReport {
    fn judge(&mut self, key: KeyId, w: &Done, j: Judgement) {
        self.judged += 1;
        let problem = match j {
            Judgement::Stale { higher } => {
                self.stale += 1;
                (w.stale != Some(true)).then(|| {
                    format!(
                        "a higher token ({higher}) had been accepted before it began, yet the \
                         resource called it fresh{}",
                        if w.accepted { " and accepted it" } else { "" }
                    )
                })
            }
            Judgement::Fresh => match (w.stale, w.accepted) {
                (Some(true), _) => Some(
                    "no higher token had been accepted, yet the resource called it stale".into(),
                ),
                (_, false) => {
                    Some("no higher token had been accepted, yet the resource rejected it".into())
                }
                _ => None,
            },
            Judgement::Ambiguous => {
                self.ambiguous += 1;
                None
            }
        };
        if let Some(problem) = problem {
            self.faults += 1;
            if self.examples.len() < EXAMPLES {
                self.examples.push(format!(
                    "client {} wrote token {} to key {} at {:.3} s: {problem}",
                    w.client.0,
                    w.token,
                    key.0,
                    w.completed.as_duration().as_secs_f64()
                ));
            }
        }
    }
}

impl Checker for AuditChecker {
    fn name(&self) -> &'static str {
        NAME
    }

    fn observe(&mut self, op: &Op) {
        if op.f != OpF::Write {
            return;
        }
        let k = self.keys.entry(op.key).or_default();
        if op.ty == OpType::Invoke {
            k.open.insert(op.client, k.done_max);
            return;
        }
        // No invoke (a history from before writes had one): the write spans its completion.
        let floor = k.open.remove(&op.client).unwrap_or(k.done_max);
        let accepted = op.ty == OpType::Ok;
        let token = op.token.map(|t| t.0);
        // The writes waiting on this one: a higher accepted token makes them ambiguous.
        let mut i = 0;
        while i < k.waiting.len() {
            let w = &mut k.waiting[i];
            if !w.on.contains(&op.client) {
                i += 1;
                continue;
            }
            w.on.retain(|c| *c != op.client);
            let higher = accepted && token.is_some_and(|t| t > w.write.token);
            if higher || w.on.is_empty() {
                let w = k.waiting.swap_remove(i);
                let j = if higher {
                    Judgement::Ambiguous
                } else {
                    Judgement::Fresh
                };
                self.report.judge(op.key, &w.write, j);
            } else {
                i += 1;
            }
        }
        let Some(token) = token else { return };
        let w = Done {
            client: op.client,
            completed: op.time,
            token,
            accepted,
            stale: op.stale,
        };
        if floor > token {
            self.report
                .judge(op.key, &w, Judgement::Stale { higher: floor });
        } else if k.done_max > token {
            self.report.judge(op.key, &w, Judgement::Ambiguous);
        } else if k.open.is_empty() {
            self.report.judge(op.key, &w, Judgement::Fresh);
        } else {
            k.waiting.push(Waiting {
                write: w,
                on: k.open.keys().copied().collect(),
            });
        }
        if accepted {
            k.done_max = k.done_max.max(token);
        }
    }

    /// `unknown` with an [`INSTRUMENT_FAULT`](crate::safety::INSTRUMENT_FAULT) note when the
    /// resource judged any write otherwise than the history: the run's verdict then is
    /// `unknown` whatever the other checkers found.
    fn finish(mut self: Box<Self>) -> CheckerOutcome {
        let mut keys: Vec<_> = std::mem::take(&mut self.keys).into_iter().collect();
        keys.sort_by_key(|(k, _)| *k);
        for (key, state) in keys {
            for w in state.waiting {
                self.report.judge(key, &w.write, Judgement::Ambiguous);
            }
        }
        let r = self.report;
        let validity = if r.faults > 0 {
            Validity::Unknown
        } else {
            Validity::Valid
        };
        let note = (r.faults > 0).then(|| {
            format!(
                "{}: the resource judged {} of {} writes otherwise than the history does \
                 (first: {})",
                crate::safety::INSTRUMENT_FAULT,
                r.faults,
                r.judged,
                r.examples.join("; ")
            )
        });
        let mut out = CheckerOutcome::new(NAME, validity, Figures::Audit(r));
        out.note = note;
        out
    }
}

/// Judges every tokened `write` of an in-memory `history`.
pub fn check(history: &History) -> AuditReport {
    let c = Box::new(checker::feed_ops(AuditChecker::default(), history));
    match c.finish().figures {
        Figures::Audit(r) => r,
        other => panic!("the audit finished with figures {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{FencingToken, Op};

    /// A write of `token` by `client` spanning `[from, to]`, accepted or not, flagged `stale`.
    fn write(from: u64, to: u64, client: u32, token: u64, accepted: bool, stale: bool) -> [Op; 2] {
        let (c, k) = (ClientId(client), KeyId(0));
        let ty = if accepted { OpType::Ok } else { OpType::Fail };
        let mut done = Op::complete(
            Nanos(to),
            c,
            OpF::Write,
            k,
            ty,
            Some(FencingToken(token)),
            None,
        );
        done.stale = Some(stale);
        [Op::invoke(Nanos(from), c, OpF::Write, k), done]
    }

    fn audit(writes: &[[Op; 2]]) -> AuditReport {
        check(&History::from_unordered(
            writes.iter().flatten().copied().collect(),
        ))
    }

    #[test]
    fn a_correct_resource_has_no_faults_and_concurrent_writes_are_ambiguous() {
        let r = audit(&[
            write(0, 10, 0, 5, true, false),
            write(20, 30, 1, 7, true, false),
            write(40, 50, 0, 5, false, true), // 7 was accepted before it began: stale
            // Concurrent with an accepted 9: either flag is fine.
            write(60, 80, 2, 9, true, false),
            write(70, 90, 1, 8, true, false),
            write(100, 110, 2, 8, false, true),
        ]);
        assert_eq!(
            (r.judged, r.stale, r.ambiguous, r.faults),
            (6, 2, 1, 0),
            "{r:?}"
        );
    }

    #[test]
    fn a_stale_write_called_fresh_and_a_fresh_one_called_stale_are_faults() {
        let r = audit(&[
            write(0, 10, 0, 5, true, false),
            write(20, 30, 1, 7, true, false),
            write(40, 50, 0, 5, true, false), // accepted and called fresh after 7: hidden damage
            write(60, 70, 2, 9, false, true), // nothing above 9 was ever accepted
            write(80, 90, 1, 10, false, false), // rejected although fresh
        ]);
        assert_eq!(r.faults, 3, "{r:?}");
        assert!(
            r.examples[0].contains("token 5") && r.examples[0].contains("higher token (7)"),
            "{:?}",
            r.examples
        );
        assert!(
            r.examples[1].contains("called it stale"),
            "{:?}",
            r.examples
        );
        assert!(r.examples[2].contains("rejected it"), "{:?}", r.examples);
    }
}
