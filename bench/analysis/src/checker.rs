//! Checkers as values: each one is a stream consumer over the time-ordered history.
//!
//! A run's history can be far larger than memory (an hour of redis-setnx is tens of millions of
//! ops), so a checker never sees the whole history at once: it is fed every op in time order
//! ([`Checker::observe`]) and every fault event ([`Checker::fault`]), then asked for its
//! verdict and figures ([`Checker::finish`]). The same checker serves the in-memory path
//! ([`run_on_history`]) and the streaming path (the history read back from disk), which is
//! what makes the two give identical answers.
//!
//! The set of checkers a run uses is data: [`for_workload`] builds the list from the
//! scenario's workload, and [`CheckerSet`] drives any list. A checker that panics, in `observe`
//! or in `finish`, is dropped and reported as [`Validity::Unknown`] with its panic message:
//! a checker that could not finish never counts as a pass (Jepsen's rule).
//!
//! # Adding a checker
//!
//! 1. Write a type implementing [`Checker`] in its own module of this crate (one concept per
//!    file, `//!` docs saying what it checks and why). Keep its state bounded by what it must
//!    remember (per key, per client), never by the history's length: it runs over hour-long
//!    histories. Only act on ops whose order you rely on being the time order.
//! 2. In [`Checker::finish`], return a [`CheckerOutcome`]: your [`Checker::name`], a
//!    [`Validity`] (`Invalid` only for a proven violation, `Unknown` when you could not
//!    decide, with [`CheckerOutcome::note`] saying why), your figures ([`Figures`]: a variant
//!    of their own for this crate's checkers, [`Figures::json`] for any other), and a [`Finding`] per violation with its time so the
//!    scorecard can charge it to a fault window. A new kind of finding is first added to
//!    [`FindingKind`]'s table (`lockbench_core::finding`).
//! 3. Add it to the list [`for_workload`] returns (conditionally on the workload if it only
//!    applies to some). Its verdict then joins the run's safety verdict, and its outcome is
//!    written to `results.json` under `safety.checks.<name>` (see `bench/report/SCHEMA.md`).
//! 4. Test it on hand-written histories through [`run_on_history`], and add it to the
//!    streaming-versus-in-memory test if it reads something the others do not.

pub use crate::figures::Figures;
use lockbench_core::scenario::Workload;
use lockbench_core::{FaultEvent, FindingKind, History, Nanos, Op, ServerObservation};
use serde::{Deserialize, Serialize};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A checker's verdict, ordered so that merging verdicts is `max` (Jepsen's priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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
    /// The name written to `results.json`: `valid`, `invalid` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Validity::Valid => "valid",
            Validity::Unknown => "unknown",
            Validity::Invalid => "invalid",
        }
    }
}

/// One violation with its time, for charging it to the fault window it happened in (see
/// [`crate::attribution`]). `kind` is one of the kinds listed in [`FindingKind`] (the one table
/// of them, in `lockbench_core::finding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What was found (its name is the scorecard's).
    pub kind: FindingKind,
    /// When it happened (the offending grant or write).
    pub at: Nanos,
}

impl Finding {
    /// One finding of `kind` at each of `times`.
    pub fn all<'a>(kind: FindingKind, times: &'a [Nanos]) -> impl Iterator<Item = Finding> + 'a {
        times.iter().map(move |&at| Finding { kind, at })
    }
}

/// What one checker concluded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckerOutcome {
    /// The checker's name ([`Checker::name`]).
    pub name: &'static str,
    /// Its verdict.
    pub validity: Validity,
    /// Its figures, as its own report type ([`Figures::None`] for a checker that failed).
    pub figures: Figures,
    /// Why the verdict is `unknown` (a panic message, or the checker's own reason); listed in
    /// `results.json`'s `failed_checkers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Violations with their times; not serialized (the scorecard aggregates them).
    #[serde(skip)]
    pub findings: Vec<Finding>,
}

impl CheckerOutcome {
    /// An outcome with its `figures`.
    pub fn new(name: &'static str, validity: Validity, figures: Figures) -> Self {
        CheckerOutcome {
            name,
            validity,
            figures,
            note: None,
            findings: Vec::new(),
        }
    }

    fn failed(name: &'static str, message: String) -> Self {
        CheckerOutcome {
            name,
            validity: Validity::Unknown,
            figures: Figures::None,
            note: Some(format!("{name}: {message}")),
            findings: Vec::new(),
        }
    }
}

/// A consumer of the time-ordered history that ends with a verdict.
///
/// Ops arrive in time order (ties keep the order in which one client recorded them), fault
/// events in time order too, interleaved with the ops: a fault event is delivered before the
/// ops recorded at or after its time.
pub trait Checker: Send {
    /// The checker's name, unique in a set; the key of its outcome in `results.json`.
    fn name(&self) -> &'static str;
    /// One op of the history.
    fn observe(&mut self, op: &Op);
    /// One fault event (a nemesis start or stop). Most checkers ignore them.
    fn fault(&mut self, _event: &FaultEvent) {}
    /// One server-side observation (who the servers said held a lock; runs with
    /// `observe_server`), delivered before the ops at or after its time. Most checkers ignore
    /// them.
    fn server(&mut self, _observation: &ServerObservation) {}
    /// The verdict and figures, after the last op.
    fn finish(self: Box<Self>) -> CheckerOutcome;
}

/// The checkers every run of `workload` uses, in the order their outcomes are reported: the
/// [`safety_checkers`], and for a workload with readers (`read_fraction > 0`) the shared-lock
/// checker ([`crate::rwlock`]).
pub fn for_workload(workload: &Workload) -> Vec<Box<dyn Checker>> {
    let mut checkers = safety_checkers();
    if workload.read_fraction > 0.0 {
        checkers.push(Box::new(crate::rwlock::RwLockChecker::default()));
    }
    checkers
}

/// The checkers whose figures `results.json` spells out as `safety`'s own fields; every other
/// checker's outcome goes to `safety.checks.<name>`.
pub const BUILT_IN: [&str; 4] = ["granted", "mutex", "fencing", "lost"];

/// The safety checkers that apply to every workload: a grant happened at all, mutual
/// exclusion, fencing, writes after the lock was lost, the fencing audit (the resource's
/// staleness verdicts recomputed from the history), releases of another client's lock.
pub fn safety_checkers() -> Vec<Box<dyn Checker>> {
    vec![
        Box::new(crate::granted::GrantedChecker::default()),
        Box::new(crate::mutex::MutexChecker::default()),
        Box::new(crate::fencing::FencingChecker::default()),
        Box::new(crate::lost::LostChecker::default()),
        Box::new(crate::fencing_audit::AuditChecker::default()),
        Box::new(crate::release::ReleaseChecker::default()),
    ]
}

/// A checker still running, or the outcome of one that panicked.
enum Slot {
    Running(Box<dyn Checker>),
    Failed(CheckerOutcome),
}

/// A list of checkers fed together; each is isolated from the others' panics.
pub struct CheckerSet {
    slots: Vec<Slot>,
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panicked".into())
}

impl CheckerSet {
    /// A set feeding `checkers`.
    pub fn new(checkers: Vec<Box<dyn Checker>>) -> Self {
        CheckerSet {
            slots: checkers.into_iter().map(Slot::Running).collect(),
        }
    }

    fn each(&mut self, mut f: impl FnMut(&mut dyn Checker)) {
        for slot in &mut self.slots {
            if let Slot::Running(c) = slot
                && let Err(panic) = catch_unwind(AssertUnwindSafe(|| f(c.as_mut())))
            {
                *slot = Slot::Failed(CheckerOutcome::failed(c.name(), panic_message(panic)));
            }
        }
    }

    /// Feeds one op to every running checker.
    pub fn observe(&mut self, op: &Op) {
        self.each(|c| c.observe(op));
    }

    /// Feeds one fault event to every running checker.
    pub fn fault(&mut self, event: &FaultEvent) {
        self.each(|c| c.fault(event));
    }

    /// Feeds one server-side observation to every running checker.
    pub fn server(&mut self, observation: &ServerObservation) {
        self.each(|c| c.server(observation));
    }

    /// Every checker's outcome, in the set's order.
    pub fn finish(self) -> Vec<CheckerOutcome> {
        self.slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Failed(outcome) => outcome,
                Slot::Running(c) => {
                    let name = c.name();
                    catch_unwind(AssertUnwindSafe(|| c.finish()))
                        .unwrap_or_else(|panic| CheckerOutcome::failed(name, panic_message(panic)))
                }
            })
            .collect()
    }
}

/// Feeds `history` (in memory) to `set`: ops, fault events and server observations merged by
/// time, fault events and then server observations before the ops at their time.
pub fn feed_history(set: &mut CheckerSet, history: &History) {
    let mut faults = history.faults().iter().peekable();
    let mut server = history.server().iter().peekable();
    for op in history.ops() {
        loop {
            let fault = faults.peek().filter(|f| f.time <= op.time).map(|f| f.time);
            let seen = server.peek().filter(|o| o.time <= op.time).map(|o| o.time);
            match (fault, seen) {
                (Some(f), Some(o)) if o < f => set.server(server.next().expect("peeked")),
                (Some(_), _) => set.fault(faults.next().expect("peeked")),
                (None, Some(_)) => set.server(server.next().expect("peeked")),
                (None, None) => break,
            }
        }
        set.observe(op);
    }
    for f in faults {
        set.fault(f);
    }
    for o in server {
        set.server(o);
    }
}

/// Feeds the ops of an in-memory `history` to one checker and hands it back (for the checkers'
/// own `check` functions, which return their typed report).
pub fn feed_ops<C: Checker>(mut checker: C, history: &History) -> C {
    history.ops().iter().for_each(|op| checker.observe(op));
    checker
}

/// Runs `checkers` over an in-memory `history`.
pub fn run_on_history(checkers: Vec<Box<dyn Checker>>, history: &History) -> Vec<CheckerOutcome> {
    let mut set = CheckerSet::new(checkers);
    feed_history(&mut set, history);
    set.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, KeyId, OpF};

    struct Panicky {
        in_finish: bool,
    }

    impl Checker for Panicky {
        fn name(&self) -> &'static str {
            "panicky"
        }
        fn observe(&mut self, op: &Op) {
            if !self.in_finish && op.time.0 > 5 {
                panic!("observe blew up at {}", op.time.0);
            }
        }
        fn finish(self: Box<Self>) -> CheckerOutcome {
            if self.in_finish {
                panic!("finish blew up");
            }
            CheckerOutcome::new("panicky", Validity::Valid, Figures::None)
        }
    }

    #[test]
    fn a_checker_that_panics_in_observe_or_finish_is_unknown_and_the_others_still_run() {
        let ops: Vec<Op> = (0..10)
            .map(|t| Op::invoke(Nanos(t), ClientId(0), OpF::Acquire, KeyId(0)))
            .collect();
        let h = History::from_unordered(ops);
        let out = run_on_history(
            vec![
                Box::new(Panicky { in_finish: false }),
                Box::new(Panicky { in_finish: true }),
                Box::new(crate::mutex::MutexChecker::default()),
            ],
            &h,
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].validity, Validity::Unknown);
        assert_eq!(
            out[0].note.as_deref(),
            Some("panicky: observe blew up at 6")
        );
        assert_eq!(out[1].validity, Validity::Unknown);
        assert_eq!(out[1].note.as_deref(), Some("panicky: finish blew up"));
        assert_eq!(out[2].validity, Validity::Valid);
        assert_eq!(out[2].name, "mutex");
    }
}
