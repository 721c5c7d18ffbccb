//! Releases and renewals: a release that reported success after its lock had been granted to
//! another client deleted someone else's lock; a renewal that did extended someone else's.
//!
//! A correct release is a compare-and-delete: it removes the lock only while it still holds
//! the releaser's value (Redis's `GET` + `DEL` script, a ZooKeeper node the session owns, an
//! etcd key under the releaser's lease), and it reports `fail lock-lost` when the compare
//! fails. A release that deletes without comparing (a plain `DEL`), or that ignores the
//! compare's result, reports success while the lock belongs to someone else, and the next
//! waiter is let in beside that holder. The mutex checker may or may not see the overlap
//! (the third client must be quick); the release itself is the evidence.
//!
//! # The rule
//!
//! A release by client `A` of key `k` is a *foreign release* when it completed `ok` and another
//! client's exclusive grant of `k` completed after `A`'s own latest grant and before `A`
//! *invoked* the release. A grant that completes while the release is in flight does not count:
//! it is usually the hand-off the release itself caused (the next waiter is woken the moment
//! the lock is gone, before the releaser hears back). An indeterminate (`info`) release proves
//! nothing; a `fail` one is the compare doing its job.
//!
//! A renewal (`workload.renew_every`) is the same compare with another act: a correct renew
//! extends the lock only while it still holds the renewer's value (compare-and-`PEXPIRE`, a
//! keep-alive of the lease the key lives on, a check that the session's lock node exists) and
//! reports `fail lock-lost` otherwise. A renew that extends without comparing (a plain
//! `PEXPIRE`) succeeds on the successor's key: the renewer goes on working as the holder, and
//! the successor's lock lives longer than its owner asked. So a renew by `A` of `k` is a
//! *foreign renew* ([`RENEW_KIND`]) when it completed `ok` and another client's exclusive
//! grant of `k` completed after `A`'s latest grant and before `A` invoked the renew; a grant
//! landing while the renew is in flight does not count (the renew may have reached the server
//! first).
//!
//! Streaming (see [`crate::checker`]): per key, the clients that hold it (from their grant to
//! their release's completion), each with whether another client was granted the key since,
//! and that flag frozen when the release or a renew is invoked: memory bounded by the holders.

use crate::checker::{self, Checker, CheckerOutcome, Finding, Validity};
use crate::figures::Figures;
use lockbench_core::{ClientId, FindingKind, History, KeyId, Nanos, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The checker's name (its outcome is `safety.checks.release` in `results.json`).
pub const NAME: &str = "release";

/// The kind of a foreign release.
pub const KIND: FindingKind = FindingKind::ForeignRelease;

/// The kind of a foreign renew.
pub const RENEW_KIND: FindingKind = FindingKind::ForeignRenew;

/// What the release checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseReport {
    /// Releases judged: those of an exclusive grant that completed `ok`.
    pub releases_ok: u64,
    /// Of those, releases made after the lock had been granted to another client: they
    /// deleted someone else's lock.
    pub foreign_releases: u64,
    /// When each foreign release completed; not serialized.
    #[serde(skip)]
    pub at: Vec<Nanos>,
    /// Renewals of an exclusive grant that completed `ok`.
    #[serde(default)]
    pub renews_ok: u64,
    /// Renewals that failed definitely (`fail`: the lock was gone, the compare did its job).
    #[serde(default)]
    pub renews_failed: u64,
    /// Renewals that reported success after the lock had been granted to another client:
    /// they extended someone else's lock.
    #[serde(default)]
    pub foreign_renews: u64,
    /// When each foreign renew completed; not serialized.
    #[serde(skip)]
    pub renew_at: Vec<Nanos>,
}

/// One holder of a key.
#[derive(Clone, Copy, Debug, Default)]
struct Holder {
    /// Another client was granted the key since this one's grant.
    taken_over: bool,
    /// `taken_over` when the release was invoked; `None` before.
    at_release: Option<bool>,
    /// `taken_over` when the renew in flight was invoked; `None` when none is.
    at_renew: Option<bool>,
}

/// The release checker as a stream over the history.
#[derive(Default)]
pub struct ReleaseChecker {
    holders: HashMap<KeyId, HashMap<ClientId, Holder>>,
    report: ReleaseReport,
}

impl Checker for ReleaseChecker {
    fn name(&self) -> &'static str {
        NAME
    }

    fn observe(&mut self, op: &Op) {
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                let holders = self.holders.entry(op.key).or_default();
                for (c, h) in holders.iter_mut() {
                    if *c != op.client {
                        h.taken_over = true;
                    }
                }
                holders.insert(op.client, Holder::default());
            }
            (OpF::Release, OpType::Invoke) => {
                let h = self.holder(op.key, op.client);
                if let Some(h) = h {
                    h.at_release = Some(h.taken_over);
                }
            }
            (OpF::Renew, OpType::Invoke) => {
                if let Some(h) = self.holder(op.key, op.client) {
                    h.at_renew = Some(h.taken_over);
                }
            }
            (OpF::Renew, ty) => {
                let Some(h) = self.holder(op.key, op.client) else {
                    return;
                };
                let foreign = h.at_renew.take() == Some(true);
                let r = &mut self.report;
                match ty {
                    OpType::Ok if foreign => {
                        r.renews_ok += 1;
                        r.foreign_renews += 1;
                        r.renew_at.push(op.time);
                    }
                    OpType::Ok => r.renews_ok += 1,
                    OpType::Fail => r.renews_failed += 1,
                    _ => {}
                }
            }
            (OpF::Release, ty) => {
                let Some(holders) = self.holders.get_mut(&op.key) else {
                    return;
                };
                let Some(h) = holders.remove(&op.client) else {
                    return;
                };
                if ty == OpType::Ok {
                    self.report.releases_ok += 1;
                    if h.at_release == Some(true) {
                        self.report.foreign_releases += 1;
                        self.report.at.push(op.time);
                    }
                }
            }
            _ => {}
        }
    }

    /// Invalid when a release deleted someone else's lock or a renew extended it.
    fn finish(self: Box<Self>) -> CheckerOutcome {
        let r = self.report;
        let validity = if r.foreign_releases > 0 || r.foreign_renews > 0 {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        let findings = Finding::all(KIND, &r.at)
            .chain(Finding::all(RENEW_KIND, &r.renew_at))
            .collect();
        let mut out = CheckerOutcome::new(NAME, validity, Figures::Release(r));
        out.findings = findings;
        out
    }
}

impl ReleaseChecker {
    fn holder(&mut self, key: KeyId, client: ClientId) -> Option<&mut Holder> {
        self.holders.get_mut(&key)?.get_mut(&client)
    }
}

/// Checks every release of an in-memory `history`.
pub fn check(history: &History) -> ReleaseReport {
    checker::feed_ops(ReleaseChecker::default(), history).report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(t: u64, c: u32, f: OpF, ty: OpType) -> Op {
        if ty == OpType::Invoke {
            Op::invoke(Nanos(t), ClientId(c), f, KeyId(0))
        } else {
            Op::complete(Nanos(t), ClientId(c), f, KeyId(0), ty, None, None)
        }
    }

    #[test]
    fn a_release_after_another_clients_grant_deleted_their_lock() {
        use OpF::{Acquire, Release};
        use OpType::{Fail, Invoke, Ok};
        let h = History::from_unordered(vec![
            op(1, 0, Acquire, Ok),
            op(2, 1, Acquire, Ok), // client 0's lock expired, client 1 holds it now
            op(3, 0, Release, Invoke),
            op(4, 0, Release, Ok), // a plain DEL: client 1's lock is gone
            op(5, 1, Release, Invoke),
            op(6, 1, Release, Fail), // its lock was deleted: the compare fails
            // A normal hand-off: the next grant lands while the release is in flight.
            op(10, 2, Acquire, Ok),
            op(11, 2, Release, Invoke),
            op(12, 3, Acquire, Ok),
            op(13, 2, Release, Ok),
            op(14, 3, Release, Invoke),
            op(15, 3, Release, Ok),
        ]);
        let r = check(&h);
        assert_eq!(r.releases_ok, 3);
        assert_eq!(r.foreign_releases, 1);
        assert_eq!(r.at, vec![Nanos(4)]);
        assert_eq!((r.renews_ok, r.foreign_renews), (0, 0));
    }

    #[test]
    fn a_renew_after_another_clients_grant_extended_their_lock() {
        use OpF::{Acquire, Release, Renew};
        use OpType::{Fail, Info, Invoke, Ok};
        let h = History::from_unordered(vec![
            op(1, 0, Acquire, Ok),
            op(2, 0, Renew, Invoke),
            op(3, 0, Renew, Ok),   // its own lock: fine
            op(4, 1, Acquire, Ok), // client 0 was paused, its lock expired: client 1 holds it
            op(5, 0, Renew, Invoke),
            op(6, 0, Renew, Ok), // a plain PEXPIRE: client 1's lock extended
            op(7, 1, Renew, Invoke),
            op(8, 1, Renew, Ok), // client 1's own renewal
            op(9, 0, Renew, Invoke),
            op(10, 0, Renew, Fail), // the compare doing its job
            op(11, 0, Renew, Invoke),
            op(12, 0, Renew, Info), // proves nothing
            op(13, 0, Release, Invoke),
            op(14, 0, Release, Fail),
            op(15, 1, Release, Invoke),
            op(16, 1, Release, Ok),
            // A grant landing while a renew is in flight does not count.
            op(20, 2, Acquire, Ok),
            op(21, 2, Renew, Invoke),
            op(22, 3, Acquire, Ok),
            op(23, 2, Renew, Ok),
        ]);
        let r = check(&h);
        assert_eq!(r.renews_ok, 4);
        assert_eq!(r.renews_failed, 1);
        assert_eq!(r.foreign_renews, 1);
        assert_eq!(r.renew_at, vec![Nanos(6)]);
        assert_eq!(r.foreign_releases, 0);
        let out = Box::new(checker::feed_ops(ReleaseChecker::default(), &h)).finish();
        assert_eq!(out.validity, Validity::Invalid);
        let kinds: Vec<FindingKind> = out.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, vec![RENEW_KIND]);
    }
}
