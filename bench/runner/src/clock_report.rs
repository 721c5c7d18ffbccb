//! The `clocks` section of a run with workers on their own clocks: each worker's
//! offset and bound from its probes, and the history judged over intervals
//! ([`lockbench_analysis::intervals::judge`], [`lockbench_analysis::across_clocks`]).
//!
//! Why the runner gathers it and not the analysis pass: the pass reads the history as points
//! on one clock; the intervals need the bounds the coordinator kept per slot while it mapped
//! each worker's op times, which only the run has. The history is read back once more, in
//! memory (a worker run is short, as every run that places clients in processes is). The
//! judging itself, and what it sets aside of the point checkers' findings, is the analysis
//! crate's.

use lockbench_analysis::across_clocks::Certain;
use lockbench_analysis::intervals::{ClockBounds, judge, judge_history};
use lockbench_report::run_dir::Written;
use lockbench_results::clocks::{Clocks, WorkerClock};
use lockbench_workloads::clock::DRIFT_ALLOWANCE_PPM;
use lockbench_workloads::link::ClockTap;
use std::collections::BTreeMap;

/// A worker on its own clock: its name, its slots, its probes.
pub(crate) type Tapped = (String, Vec<u32>, ClockTap);

/// The interval judgement of a run across clocks.
pub(crate) struct Judged {
    /// The results' `clocks` section.
    pub(crate) clocks: Clocks,
    /// What the interval rules prove beyond the judgement's own counts.
    pub(crate) certain: Certain,
}

/// The `clocks` section of backend `name`'s history in `written`, for the workers in `taps`
/// among `clients` slots. `None` without such workers. With the servers observed, `observed`
/// is the history with their observations, and lost-while-held is judged over the intervals
/// too.
pub(crate) fn section(
    written: &Written,
    name: &str,
    clients: u32,
    taps: &[Tapped],
    observed: Option<&lockbench_core::History>,
) -> anyhow::Result<Option<Judged>> {
    if taps.is_empty() {
        return Ok(None);
    }
    let mut slots = BTreeMap::new();
    let mut workers = Vec::new();
    for (worker, its_slots, tap) in taps {
        let bounds = tap.bounds();
        let samples = tap.samples();
        // NTP's choice: the probe with the shortest round trip.
        let best = samples
            .iter()
            .min_by_key(|s| s.received.0.saturating_sub(s.sent.0));
        workers.push(WorkerClock::new(
            worker,
            its_slots.clone(),
            samples.len() as u64,
            best.map(|s| s.offset()),
            bounds.values().copied().max().unwrap_or(0),
        ));
        // A restarted worker runs the same slots as the one it replaced: the wider bound.
        for (slot, bound) in bounds {
            let b = slots.entry(slot).or_insert(0);
            *b = (*b).max(bound);
        }
    }
    let read;
    let ops: &[lockbench_core::Op] = match observed {
        Some(h) => h.ops(),
        None => {
            read = lockbench_core::history::ordered_ops(
                &written.path,
                written.offset,
                Some(name),
                written.lateness.max,
            )?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("history out of order: {e:?}"))?;
            &read
        }
    };
    let bounds = ClockBounds { clients, slots };
    let certain = Certain::of(ops, &bounds);
    let judgement = match observed {
        Some(h) => judge_history(h, &bounds),
        None => judge(ops, &bounds),
    };
    Ok(Some(Judged {
        clocks: Clocks {
            drift_allowance_ppm: DRIFT_ALLOWANCE_PPM,
            workers,
            judgement,
        },
        certain,
    }))
}
