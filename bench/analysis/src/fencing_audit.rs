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
//! Cost: per key, the accepted writes sorted by completion and by invocation with running
//! maxima of their tokens, then two binary searches per write: `O(n log n)`.

use lockbench_core::{ClientId, History, KeyId, Nanos, OpF, OpType};
use serde::Serialize;
use std::collections::HashMap;

/// How many faults are described in words (all are counted).
pub const EXAMPLES: usize = 3;

/// What the audit found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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

struct Write {
    client: ClientId,
    invoked: Nanos,
    completed: Nanos,
    token: u64,
    accepted: bool,
    stale: Option<bool>,
}

/// Accepted writes of one key in one time order, with the running maximum of their tokens.
struct Prefix {
    times: Vec<Nanos>,
    max_token: Vec<u64>,
}

impl Prefix {
    fn new(mut points: Vec<(Nanos, u64)>) -> Prefix {
        points.sort_unstable();
        let mut max = 0;
        let max_token = points
            .iter()
            .map(|(_, t)| {
                max = max.max(*t);
                max
            })
            .collect();
        Prefix {
            times: points.into_iter().map(|(t, _)| t).collect(),
            max_token,
        }
    }

    /// The highest token among the entries strictly before `time` (0 when none).
    fn highest_before(&self, time: Nanos) -> u64 {
        let n = self.times.partition_point(|t| *t < time);
        if n == 0 { 0 } else { self.max_token[n - 1] }
    }
}

/// Judges every tokened `write` of `history`.
pub fn check(history: &History) -> AuditReport {
    let mut open: HashMap<ClientId, Nanos> = HashMap::new();
    let mut by_key: HashMap<KeyId, Vec<Write>> = HashMap::new();
    for op in history.ops().iter().filter(|o| o.f == OpF::Write) {
        if op.ty == OpType::Invoke {
            open.insert(op.client, op.time);
            continue;
        }
        let invoked = open.remove(&op.client).unwrap_or(op.time);
        let Some(token) = op.token else { continue };
        by_key.entry(op.key).or_default().push(Write {
            client: op.client,
            invoked,
            completed: op.time,
            token: token.0,
            accepted: op.ty == OpType::Ok,
            stale: op.stale,
        });
    }
    let mut r = AuditReport::default();
    let mut keys: Vec<_> = by_key.into_iter().collect();
    keys.sort_by_key(|(k, _)| *k);
    for (key, writes) in keys {
        let accepted = writes.iter().filter(|w| w.accepted);
        let by_completion = Prefix::new(accepted.clone().map(|w| (w.completed, w.token)).collect());
        let by_invocation = Prefix::new(accepted.map(|w| (w.invoked, w.token)).collect());
        for w in &writes {
            r.judged += 1;
            let certainly_stale = by_completion.highest_before(w.invoked) > w.token;
            let maybe_stale = by_invocation.highest_before(w.completed) > w.token;
            let problem = if certainly_stale {
                r.stale += 1;
                (w.stale != Some(true)).then(|| {
                    format!(
                        "a higher token ({}) had been accepted before it began, yet the \
                         resource called it fresh{}",
                        by_completion.highest_before(w.invoked),
                        if w.accepted { " and accepted it" } else { "" }
                    )
                })
            } else if !maybe_stale {
                match (w.stale, w.accepted) {
                    (Some(true), _) => Some(
                        "no higher token had been accepted, yet the resource called it stale"
                            .to_string(),
                    ),
                    (_, false) => Some(
                        "no higher token had been accepted, yet the resource rejected it"
                            .to_string(),
                    ),
                    _ => None,
                }
            } else {
                r.ambiguous += 1;
                None
            };
            if let Some(problem) = problem {
                r.faults += 1;
                if r.examples.len() < EXAMPLES {
                    r.examples.push(format!(
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
    r
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
