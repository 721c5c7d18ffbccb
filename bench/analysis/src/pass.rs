//! One pass over a run's time-ordered history computes every figure of its result.
//!
//! The history of a long run does not fit in memory, so the analysis is a single stream
//! consumer: the run's checkers ([`crate::checker`], the shared-lock checker among them for a
//! workload with readers), hand-offs, fault-window availability and stalls are all fed the
//! same ops in time order, with the fault
//! events merged in by time (a fault event before the ops at its time, as
//! [`crate::checker::feed_history`] does). Its state is bounded by the clients and keys, plus
//! the acquisitions inside fault windows, never by the run's length.
//!
//! Two sources feed it: an in-memory [`History`] ([`Pass::run_in_memory`], for tests and short
//! histories) and the history file read back as a stream ([`Pass::run_file`]), ordered as
//! `lockbench_core::history::ordered` explains. The same code runs on both, and a test requires
//! the two to agree exactly.
//!
//! A history without an end line (cut off, or written before end lines) is judged only up to
//! its horizon, and says so in an outcome of its own: [`crate::horizon`].

use crate::availability::{self, Availability, Stall, Stalls, Window};
use crate::checker::{self, CheckerOutcome, CheckerSet};
use crate::figures::Reports;
use crate::handoff::Handoffs;
use crate::horizon::{self, Horizon};
use crate::rwlock::RwLockReport;
use hdrhistogram::Histogram;
use lockbench_core::history::ordered::{Lateness, Reach, Scan};
use lockbench_core::scenario::Workload;
use lockbench_core::{FaultEvent, History, Nanos, Op, OpF, OpType};
use std::io;
use std::path::Path;
use std::time::Duration;

/// What a pass needs to know besides the history.
#[derive(Clone, Debug)]
pub struct Params {
    /// The workload (which checkers run; shared locks when `read_fraction > 0`).
    pub workload: Workload,
    /// The measured window (hand-offs and stalls are counted inside it).
    pub measure_start: Nanos,
    /// End of the measured window.
    pub measure_end: Nanos,
    /// No-progress alarm threshold.
    pub stall_alarm: Duration,
}

/// Every figure the pass computes.
#[derive(Debug)]
pub struct Analysed {
    /// The checkers' outcomes, in the set's order; for a cut-off history, followed by the
    /// [`horizon::NAME`] outcome saying what was not judged.
    pub outcomes: Vec<CheckerOutcome>,
    /// Hand-off latencies, µs.
    pub handoffs: Histogram<u64>,
    /// Fault windows with the acquisitions around them (violations not yet attributed).
    pub windows: Vec<Window>,
    /// Gaps with no successful acquisition.
    pub stalls: Vec<Stall>,
    /// The shared-lock checker's figures (its outcome is among `outcomes`), for workloads with
    /// readers; `None` too when that checker failed.
    pub shared_lock: Option<RwLockReport>,
    /// Successful releases in the whole history (the fan-out figures' denominator).
    pub releases: u64,
    /// Ops read, judged or not.
    pub ops: u64,
}

/// The pass in progress.
pub struct Pass {
    checkers: CheckerSet,
    handoffs: Handoffs,
    availability: Availability,
    stalls: Stalls,
    releases: u64,
    ops: u64,
    /// The fault events still to feed, in time order.
    faults: Vec<FaultEvent>,
    /// For a cut-off history: where judging stops.
    horizon: Option<Horizon>,
}

impl Pass {
    /// A pass over a history with `faults` (in time order) that ends at `end` (its last op or
    /// fault event); a cut-off one is judged before `horizon` only.
    pub fn new(p: &Params, faults: &[FaultEvent], end: Nanos, horizon: Option<Nanos>) -> Pass {
        let judged = horizon.map_or(faults.len(), |h| faults.partition_point(|f| f.time < h));
        let (faults, later) = faults.split_at(judged);
        let horizon = horizon.map(|h| Horizon::new(h, later.len() as u64));
        let until = |t: Nanos| horizon.map_or(t, |h| h.clamp(t));
        Pass {
            checkers: CheckerSet::new(checker::for_workload(&p.workload)),
            handoffs: Handoffs::new(p.measure_start, until(p.measure_end)),
            availability: Availability::new(faults, until(end)),
            stalls: Stalls::new(p.measure_start, until(p.measure_end), p.stall_alarm),
            releases: 0,
            ops: 0,
            faults: faults.to_vec(),
            horizon,
        }
    }

    /// Takes the next op.
    pub fn observe(&mut self, op: &Op) {
        self.ops += 1;
        self.checkers.observe(op);
        self.handoffs.observe(op);
        self.availability.observe(op);
        self.stalls.observe(op);
        if op.f == OpF::Release && op.ty == OpType::Ok {
            self.releases += 1;
        }
    }

    /// Takes the next fault event.
    pub fn fault(&mut self, event: &FaultEvent) {
        self.checkers.fault(event);
    }

    /// The figures.
    pub fn finish(self) -> Analysed {
        let mut outcomes = self.checkers.finish();
        let shared_lock = outcomes.rwlock().cloned();
        outcomes.extend(self.horizon.map(|h| h.outcome()));
        Analysed {
            outcomes,
            handoffs: self.handoffs.finish(),
            windows: self.availability.finish(),
            stalls: self.stalls.finish(),
            shared_lock,
            releases: self.releases,
            ops: self.ops,
        }
    }

    /// Feeds time-ordered `ops` with the pass's fault events merged in, and finishes. Ops at
    /// or after the horizon are counted, not judged.
    pub fn feed(
        mut self,
        ops: impl Iterator<Item = Result<Op, impl std::error::Error>>,
    ) -> io::Result<Analysed> {
        let all = std::mem::take(&mut self.faults);
        let mut faults = all.iter().peekable();
        for op in ops {
            let op = op.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            if self.horizon.as_mut().is_some_and(|h| h.skips(&op)) {
                self.ops += 1;
                continue;
            }
            while let Some(f) = faults.next_if(|f| f.time <= op.time) {
                self.fault(f);
            }
            self.observe(&op);
        }
        faults.for_each(|f| self.fault(f));
        Ok(self.finish())
    }

    /// The in-memory path; a history read from a file without an end line is judged up to its
    /// horizon.
    pub fn run_in_memory(p: &Params, history: &History) -> Analysed {
        let horizon = history.is_cut_off().then(|| {
            let mut reach = Reach::default();
            history.ops().iter().for_each(|op| reach.observe(op));
            horizon::of(&reach, p.workload.clients)
        });
        let pass = Pass::new(p, history.faults(), availability::end_of(history), horizon);
        let ops = history.ops().iter().map(|op| Ok::<_, io::Error>(*op));
        pass.feed(ops).expect("in-memory ops cannot fail")
    }

    /// The streaming path, when the writer measured the stream as it wrote it: `backend`'s ops
    /// from byte `offset` of the history file, reordered within `lateness.max`; judged before
    /// `horizon` only when the history was cut off (`None`: complete).
    pub fn run_written(
        p: &Params,
        path: &Path,
        offset: u64,
        backend: Option<&str>,
        faults: &[FaultEvent],
        lateness: &Lateness,
        horizon: Option<Nanos>,
    ) -> io::Result<Analysed> {
        let mut faults = faults.to_vec();
        faults.sort_by_key(|f| f.time);
        let end = lateness
            .latest()
            .max(faults.last().map(|f| f.time).unwrap_or_default());
        let ops = lockbench_core::history::ordered_ops(path, offset, backend, lateness.max)?;
        Pass::new(p, &faults, end, horizon).feed(ops)
    }

    /// The streaming path on a history file alone: a first pass finds the fault events, the
    /// stream's lateness and, without an end line, the horizon; the second feeds the ordered
    /// ops.
    pub fn run_file(
        p: &Params,
        path: &Path,
        offset: u64,
        backend: Option<&str>,
    ) -> io::Result<Analysed> {
        let scan = lockbench_core::history::scan(path, offset, backend)?;
        Pass::run_scanned(p, path, offset, backend, &scan)
    }

    /// The second pass of [`Pass::run_file`], for a caller that needed the first one's `scan`
    /// itself (`lockbench analyse` takes the measured window from its first op).
    pub fn run_scanned(
        p: &Params,
        path: &Path,
        offset: u64,
        backend: Option<&str>,
        scan: &Scan,
    ) -> io::Result<Analysed> {
        let horizon = scan
            .end
            .is_none()
            .then(|| horizon::of(&scan.reach, p.workload.clients));
        let (faults, lateness) = (&scan.faults, &scan.lateness);
        Pass::run_written(p, path, offset, backend, faults, lateness, horizon)
    }
}
