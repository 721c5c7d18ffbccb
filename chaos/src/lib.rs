//! The chaos controller: where faults become real.
//!
//! A fault is data ([`lockbench_core::Fault`]: a verb on named targets). A [`Nemesis`] applies
//! it to real processes and hosts and reports what it did as [`FaultEvent`]s, which the runner
//! records in the history on the run's clock. Nemeses never panic on a fault they cannot apply:
//! they report it with `applied = false` and a note saying why, so a result never claims a
//! fault that did not happen.
#![deny(missing_docs)]

use lockbench_core::{Fault, FaultEvent, RunClock};
use std::future::Future;

/// Applies faults and undoes them (Jepsen's nemesis).
///
/// Contract: `apply` returns one event per fault window it opened or closed (a `heal` closes
/// every open partition window); `heal_all` undoes everything still in effect and must be
/// safe to call at any time, any number of times (it is the teardown safety net).
pub trait Nemesis: Send {
    /// Applies `fault` now.
    fn apply(&mut self, fault: &Fault, clock: &RunClock) -> impl Future<Output = Vec<FaultEvent>> + Send;

    /// Undoes every fault still in effect.
    fn heal_all(&mut self, clock: &RunClock) -> impl Future<Output = Vec<FaultEvent>> + Send;
}
