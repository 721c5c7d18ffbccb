//! Shared (read/write) locks: readers may hold a key together, a writer never holds it with
//! anyone.
//!
//! A client believes it holds a key from its acquire's `ok` (`acquire` = exclusive,
//! `acquire-shared` = shared) until it invokes release, as in [`crate::mutex`]. Every grant is
//! checked against the holders at that moment: a shared grant conflicts with an exclusive
//! holder, an exclusive grant with any holder. The mutual-exclusion checker already counts
//! exclusive-with-exclusive overlaps; this one adds the reader/writer conflicts and shows that
//! sharing actually happened (`max_concurrent_readers`), because a shared lock that never lets
//! two readers in is correct but pointless, and a test should be able to tell.
//!
//! It is a checker like the others ([`crate::checker`]): [`crate::checker::for_workload`] adds
//! it to every workload with readers (`read_fraction > 0`), any conflict makes its verdict, and
//! so the run's, invalid, and each reader/writer conflict is a finding of kind
//! [`FindingKind::RwConflict`] (`rw_conflict`, at the offending grant) for the scorecard.
//! Writer/writer conflicts are the mutual-exclusion checker's findings (`mutex`, by episode),
//! so they are counted here but not found twice.

use crate::checker::{self, Checker, CheckerOutcome, Finding, Validity};
use crate::figures::Figures;
use lockbench_core::{ClientId, FindingKind, History, KeyId, Nanos, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The checker's name (its outcome is `safety.checks.rwlock` in `results.json`; its figures
/// are also the result's `shared_lock`).
pub const NAME: &str = "rwlock";

/// What the shared-lock checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RwLockReport {
    /// Grants in shared mode.
    pub shared_grants: u64,
    /// Grants in exclusive mode.
    pub exclusive_grants: u64,
    /// The most readers that held one key at the same time.
    pub max_concurrent_readers: u64,
    /// Grants made while an incompatible holder (another client) still believed it held the
    /// key: a reader next to a writer, or a writer next to anyone.
    pub conflicts: u64,
    /// Of `conflicts`, those between a reader and a writer (the rest are writer/writer, which
    /// the mutual-exclusion checker reports too).
    pub reader_writer_conflicts: u64,
    /// When each reader/writer conflict's grant completed, for the scorecard; not serialized.
    #[serde(skip)]
    pub reader_writer_at: Vec<Nanos>,
}

/// The shared-lock checker as a stream over the time-ordered ops.
#[derive(Default)]
pub struct RwLockChecker {
    /// Per key: current holders (client, shared?).
    holders: HashMap<KeyId, Vec<(ClientId, bool)>>,
    report: RwLockReport,
}

impl Checker for RwLockChecker {
    fn name(&self) -> &'static str {
        NAME
    }

    fn observe(&mut self, op: &Op) {
        let report = &mut self.report;
        match (op.f, op.ty) {
            (OpF::Acquire | OpF::AcquireShared, OpType::Ok) => {
                let shared = op.f == OpF::AcquireShared;
                let h = self.holders.entry(op.key).or_default();
                let others = h.iter().filter(|(c, _)| *c != op.client);
                let (mut readers, mut writers) = (0u64, 0u64);
                for (_, s) in others {
                    if *s {
                        readers += 1;
                    } else {
                        writers += 1;
                    }
                }
                if shared {
                    report.shared_grants += 1;
                    if writers > 0 {
                        report.conflicts += 1;
                        report.reader_writer_conflicts += 1;
                        report.reader_writer_at.push(op.time);
                    }
                } else {
                    report.exclusive_grants += 1;
                    if readers + writers > 0 {
                        report.conflicts += 1;
                        if readers > 0 {
                            report.reader_writer_conflicts += 1;
                            report.reader_writer_at.push(op.time);
                        }
                    }
                }
                h.retain(|(c, _)| *c != op.client);
                h.push((op.client, shared));
                let now_readers = h.iter().filter(|(_, s)| *s).count() as u64;
                report.max_concurrent_readers = report.max_concurrent_readers.max(now_readers);
            }
            (OpF::Release, OpType::Invoke) => {
                if let Some(h) = self.holders.get_mut(&op.key) {
                    h.retain(|(c, _)| *c != op.client);
                }
            }
            _ => {}
        }
    }

    /// Invalid on any conflict: a reader next to a writer, or a writer next to anyone.
    fn finish(self: Box<Self>) -> CheckerOutcome {
        let r = self.report;
        let validity = if r.conflicts > 0 {
            Validity::Invalid
        } else {
            Validity::Valid
        };
        let findings = Finding::all(FindingKind::RwConflict, &r.reader_writer_at).collect();
        let mut out = CheckerOutcome::new(NAME, validity, Figures::RwLock(r));
        out.findings = findings;
        out
    }
}

/// Checks every key of `history`.
pub fn check(history: &History) -> RwLockReport {
    checker::feed_ops(RwLockChecker::default(), history).report
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Nanos;

    fn op(t: u64, c: u32, f: OpF, ty: OpType) -> Op {
        Op::complete(Nanos(t), ClientId(c), f, KeyId(0), ty, None, None)
    }

    fn history(ops: Vec<Op>) -> History {
        History::with_faults(ops, Vec::new())
    }

    #[test]
    fn readers_share_and_writers_wait() {
        let h = history(vec![
            op(1, 1, OpF::AcquireShared, OpType::Ok),
            op(2, 2, OpF::AcquireShared, OpType::Ok),
            op(3, 1, OpF::Release, OpType::Invoke),
            op(4, 2, OpF::Release, OpType::Invoke),
            op(5, 3, OpF::Acquire, OpType::Ok),
            op(6, 3, OpF::Release, OpType::Invoke),
            op(7, 1, OpF::AcquireShared, OpType::Ok),
        ]);
        let r = check(&h);
        assert_eq!(r.max_concurrent_readers, 2);
        assert_eq!((r.shared_grants, r.exclusive_grants), (3, 1));
        assert_eq!(r.conflicts, 0);
    }

    /// Regression: a shared lock whose writer held beside a reader read "safety ok": this
    /// checker ran outside the run's checker set. With readers in the workload it is in the
    /// set, its conflict makes the verdict invalid, and the scorecard gets its kind.
    #[test]
    fn a_reader_writer_conflict_makes_the_runs_verdict_invalid() {
        let text = "name = \"t\"\nbackends = [\"zk-rwlock\"]\n[workload]\nclients = 2\n\
                    keys = 1\nread_fraction = 0.5\n";
        let workload = lockbench_core::Scenario::load("t", text, &[])
            .unwrap()
            .workload;
        let release = |t: u64, c: u32| Op::invoke(Nanos(t), ClientId(c), OpF::Release, KeyId(0));
        let h = history(vec![
            op(1, 1, OpF::AcquireShared, OpType::Ok),
            op(2, 2, OpF::Acquire, OpType::Ok), // a writer beside the reader
            release(3, 1),
            release(4, 2),
            op(5, 1, OpF::AcquireShared, OpType::Ok),
            op(6, 3, OpF::AcquireShared, OpType::Ok), // readers together: fine
        ]);
        let s = crate::Safety::from_outcomes(checker::run_on_history(
            checker::for_workload(&workload),
            &h,
        ));
        assert_eq!(s.verdict, Validity::Invalid, "{s:?}");
        assert_eq!(s.outcome("mutex").unwrap().validity, Validity::Valid);
        let figures = crate::figures::Reports::rwlock(s.outcomes.as_slice()).unwrap();
        assert_eq!(figures.reader_writer_conflicts, 1);
        assert_eq!(figures.max_concurrent_readers, 2);
        assert_eq!(
            crate::attribution::violations(&s),
            vec![(FindingKind::RwConflict.name(), Nanos(2))],
            "one finding, at the offending grant"
        );
        // Without readers the workload has no shared lock to check.
        let exclusive = lockbench_core::Scenario::load("t", &text.replace("0.5", "0"), &[]);
        let n = checker::for_workload(&exclusive.unwrap().workload).len();
        assert_eq!(n, checker::safety_checkers().len());
    }

    #[test]
    fn a_writer_with_a_reader_is_a_conflict_either_way_round() {
        let h = history(vec![
            op(1, 1, OpF::AcquireShared, OpType::Ok),
            op(2, 2, OpF::Acquire, OpType::Ok),
            op(3, 3, OpF::AcquireShared, OpType::Ok),
            op(4, 4, OpF::Acquire, OpType::Ok),
        ]);
        let r = check(&h);
        assert_eq!(r.conflicts, 3);
        assert_eq!(r.reader_writer_conflicts, 3);
        // An indeterminate grant proves nothing.
        let h = history(vec![
            op(1, 1, OpF::Acquire, OpType::Info),
            op(2, 2, OpF::AcquireShared, OpType::Ok),
        ]);
        assert_eq!(check(&h).conflicts, 0);
    }
}
