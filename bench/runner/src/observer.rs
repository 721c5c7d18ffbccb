//! What a run tells whoever watches it, as it happens: a backend (or election recipe,
//! repetition, sweep step) starting and finishing, fault events, notes and warnings.
//!
//! Why a trait: the engine must not decide how things look. The command line renders these as
//! a progress bar and `lockbench:` lines on stderr; a test, a bench or a future daemon observes
//! the same calls and renders nothing (or asserts on them). Every method has a no-op default,
//! so an observer implements only what it shows. The observer is shared with the tasks of a
//! run (fault events arrive from the fault loop's task), hence `Send + Sync` and `&self`.

use lockbench_core::steady::Steady;
use lockbench_core::{FaultEvent, Scenario};
use lockbench_results::BackendResult;
use lockbench_results::capacity::SweepStep;
use lockbench_results::model::SteadyWarmup;
use lockbench_workloads::RunControl;
use std::time::Duration;

/// What is starting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// A lock backend under the scenario's workload.
    Lock,
    /// A leader-election recipe under the failover workload.
    Election,
}

/// A unit of work that starts: one backend, repetition, step or election recipe.
pub struct Started<'a> {
    /// Its label (`zk-fair`, `zk-fair #2/3`, `zk-election`).
    pub label: &'a str,
    /// Lock backend or election recipe.
    pub kind: UnitKind,
    /// The scenario it runs (this unit's copy: its seed, its backends).
    pub scenario: &'a Scenario,
    /// Planned length on the run clock: warm-up, measured window and (with faults) recovery.
    pub planned: Duration,
    /// Its live counters (acquisitions so far) and stop switch.
    pub control: &'a RunControl,
}

/// Watches a run. Every method defaults to doing nothing.
pub trait Observer: Send + Sync {
    /// A unit starts.
    fn started(&self, _unit: &Started<'_>) {}

    /// A unit finished (its result may have `status = "error"`, with the error).
    fn finished(&self, _label: &str, _kind: UnitKind, _result: &BackendResult) {}

    /// A warm-up round of `backend` finished (`[steady]`, as `spec` says): `so_far` holds
    /// every round's figures until now. The rounds themselves are not units: `started` and
    /// `finished` are not called for them.
    fn warming(&self, _backend: &str, _so_far: &SteadyWarmup, _spec: &Steady) {}

    /// `backend`'s warm-up ended (settled or not); its measured run starts next.
    fn warmed(&self, _backend: &str, _warmup: &SteadyWarmup, _spec: &Steady) {}

    /// A fault event of `backend`'s run, the moment it is recorded (a fault that could not be
    /// applied has `applied = false`).
    fn fault(&self, _backend: &str, _event: &FaultEvent) {}

    /// Something worth a line on the console (where results go, what runs where).
    fn note(&self, _text: &str) {}

    /// Something went wrong that does not stop the run (a worker's problems, a lossy set-up).
    fn warning(&self, _text: &str) {}

    /// A sweep step of `backend` at grid point `point` finished; `again`: it failed while
    /// lockbench was the limit and runs once more.
    fn sweep_step(&self, _backend: &str, _point: &str, _step: &SweepStep, _again: bool) {}
}

/// An observer that shows nothing (tests, benches).
pub struct Silent;

impl Observer for Silent {}
