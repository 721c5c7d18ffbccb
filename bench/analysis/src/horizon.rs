//! The horizon of a history that was cut off: the time before which every client's ops are
//! known to be in the file, and the only part of such a history the pass judges.
//!
//! # Why
//!
//! A run writes its history as it goes, and each client slot ships its ops in chunks (a
//! quarter second or 1,024 ops, longer while the slot is stuck in one call:
//! `lockbench_workloads::recorder`), so the file is in arrival order and an op can reach it
//! more than a second after other clients' later ops. A run that is cut off (disk full, `kill
//! -9`, a crash) leaves a file whose tail holds some clients' later ops but not other clients'
//! earlier ones: one client's release can be missing while another client's later grant is
//! there, and the mutex checker then reports an overlap that never happened (the hour-long run
//! cut by `ENOSPC` in docs/soak.md, showed one in its last second). A finished
//! run says so with an end line (`lockbench_core::history::End`); a history without one is
//! judged only up to its horizon.
//!
//! # The definition
//!
//! A slot's ops reach the file in the order it recorded them (one recorder, one channel, chunks
//! sent one after another), so what the file holds of a slot is a *prefix* of its ops: all of
//! them up to the latest one that arrived. The horizon is the earliest, over the run's slots,
//! of that latest time ([`of`]); every op of every slot before it is in the file. In detail:
//!
//! - a slot's client ids are `slot + generation × clients` (a client replaced after an
//!   indeterminate outcome gets a fresh id), so a slot reaches as far as the latest of its ids;
//! - a `write` does not count towards its client's reach
//!   (`lockbench_core::history::ordered::Reach`): with worker processes the resource's service
//!   records it, not the client. It is still in the file before the client's later ops: the
//!   service records a write before it replies, so a write the client waited for precedes the
//!   client's next op in the stream (one the client had stopped waiting for is recorded the
//!   moment it arrives, microseconds after its time: a race this does not guard against);
//! - a slot with no op in the file is known nowhere: the horizon is 0 and nothing is judged;
//! - the writer's measured lateness is no bound: it is measured on the ops that arrived, and a
//!   slot stuck in a long call holds ops older than any lateness seen so far.
//!
//! # What is judged
//!
//! The pass (`crate::pass`) feeds its checkers only the ops and fault events before the
//! horizon, and ends the measured window there (hand-offs, stalls, fault windows). That is a
//! prefix of the run's real history, and every checker only looks back (a hold, write or fault
//! still open at the end is never a violation), so a cut-off history gives no false violation
//! and a violation before the horizon is found as in a complete one. The pass adds an outcome
//! named [`NAME`], verdict unknown, noting "history cut off at `<t>` s: N ops after it not
//! judged": a cut-off run is never "safe" by omission (what was not checked is unknown), and
//! a violation found before the horizon still makes it invalid.

use crate::checker::{CheckerOutcome, Validity};
use crate::figures::Figures;
use lockbench_core::history::ordered::Reach;
use lockbench_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

/// The outcome's name (`safety.checks.horizon` in `results.json`).
pub const NAME: &str = "horizon";

/// The horizon of a cut-off history whose run had `clients` slots, from how far each client's
/// ops reach (see the module docs).
pub fn of(reach: &Reach, clients: u32) -> Nanos {
    let clients = clients.max(1);
    let mut slots: Vec<Option<Nanos>> = vec![None; clients as usize];
    for (client, &t) in &reach.0 {
        let slot = &mut slots[(client.0 % clients) as usize];
        *slot = Some(slot.map_or(t, |s| s.max(t)));
    }
    slots
        .into_iter()
        .map(Option::unwrap_or_default)
        .min()
        .unwrap_or_default()
}

/// What the pass left unjudged of a cut-off history: the figures of its [`NAME`] outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CutOff {
    /// The horizon, seconds on the run's clock: only what happened before it was judged.
    pub horizon_s: f64,
    /// Ops at or after the horizon, not judged.
    pub ops_not_judged: u64,
    /// The latest op time in the file, seconds.
    pub last_op_s: f64,
    /// Fault events at or after the horizon, not judged.
    pub faults_not_judged: u64,
}

/// The pass's bookkeeping for a cut-off history.
#[derive(Clone, Copy, Debug)]
pub struct Horizon {
    at: Nanos,
    ops: u64,
    last: Nanos,
    faults: u64,
}

impl Horizon {
    /// A cut-off history judged before `at`, with `faults_after` fault events not judged.
    pub fn new(at: Nanos, faults_after: u64) -> Horizon {
        Horizon {
            at,
            ops: 0,
            last: at,
            faults: faults_after,
        }
    }

    /// The horizon.
    pub fn at(&self) -> Nanos {
        self.at
    }

    /// `t` if it is before the horizon, else the horizon.
    pub fn clamp(&self, t: Nanos) -> Nanos {
        t.min(self.at)
    }

    /// `true` (and counted) when `op` lies at or after the horizon: it is not judged.
    pub fn skips(&mut self, op: &Op) -> bool {
        let after = op.time >= self.at;
        if after {
            self.ops += 1;
            self.last = self.last.max(op.time);
        }
        after
    }

    /// The outcome saying what was not judged: unknown, never a pass.
    pub fn outcome(&self) -> CheckerOutcome {
        let secs = |t: Nanos| t.as_duration().as_secs_f64();
        let figures = CutOff {
            horizon_s: secs(self.at),
            ops_not_judged: self.ops,
            last_op_s: secs(self.last),
            faults_not_judged: self.faults,
        };
        let note = format!(
            "history cut off at {:.3} s (no end line): {} ops after it (to {:.3} s) and {} fault \
             events not judged",
            figures.horizon_s, figures.ops_not_judged, figures.last_op_s, figures.faults_not_judged
        );
        let mut out = CheckerOutcome::new(NAME, Validity::Unknown, Figures::CutOff(figures));
        out.note = Some(note);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::ClientId;

    #[test]
    fn the_horizon_is_the_slowest_slot_with_replaced_clients_folded_into_their_slot() {
        let reach = |pairs: &[(u32, u64)]| {
            Reach(
                pairs
                    .iter()
                    .map(|&(c, t)| (ClientId(c), Nanos(t)))
                    .collect(),
            )
        };
        // Three slots; client 4 replaced slot 1's client 1, which stopped at 20.
        let r = reach(&[(0, 90), (1, 20), (2, 70), (4, 95)]);
        assert_eq!(of(&r, 3), Nanos(70));
        // Slot 2 never reached the file: nothing is known of it.
        assert_eq!(of(&reach(&[(0, 90), (1, 80)]), 3), Nanos(0));
    }
}
