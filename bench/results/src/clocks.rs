//! The `clocks` section of a result: workers that ran on their own clocks, how well the
//! coordinator knew each one, and what judging the history over intervals found.
//!
//! Why it is in results at all: a run whose clients dialled in from other hosts
//! (`lockbench worker --coordinator`) has op times that are intervals, not points. Its safety
//! figures are honest only with the uncertainty beside them: "0 certain overlaps, 47 ambiguous
//! at a bound of 0.18 ms" says something a bare "0 overlaps" does not. A result on the
//! coordinator's one clock (tasks, local worker processes, compose containers stamping the
//! shared `CLOCK_MONOTONIC`) has no such section.
//!
//! The runner fills it: per worker its name, slots, probe count, offset estimate and bound
//! (from `lockbench_workloads::clock`'s samples and `RemoteWorker::clock_bounds`), and the
//! judgement from [`lockbench_analysis::intervals::judge_history`] over the run's history with
//! the same bounds.

use lockbench_analysis::intervals::IntervalJudgement;
use serde::{Deserialize, Serialize};

/// Workers on their own clocks and the interval judgement of the run's history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Clocks {
    /// The drift allowance the mapping assumed between probes, parts per million
    /// (`lockbench_workloads::clock::DRIFT_ALLOWANCE_PPM` unless the run chose another).
    pub drift_allowance_ppm: u64,
    /// Every worker that ran on its own clock, in the order they were admitted.
    pub workers: Vec<WorkerClock>,
    /// What judging the history over its op intervals found: certain and ambiguous counts of
    /// each finding, and the largest bound of any op's time.
    pub judgement: IntervalJudgement,
}

/// One worker's clock as the coordinator measured it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerClock {
    /// The name it gave (`--name`; e.g. `worker-3` from a Kubernetes Job's completion index).
    pub name: String,
    /// The workload's client slots it ran.
    pub slots: Vec<u32>,
    /// Probes it answered (one a second, from the start to the end of the run).
    pub probes: u64,
    /// How far its clock was ahead of the coordinator's (negative: behind), ms: the offset of
    /// the answered probe with the shortest round trip (NTP's choice), right to within half
    /// that round trip. `null` when it answered no probe.
    pub offset_ms: Option<f64>,
    /// The largest uncertainty (half-width) of any of its ops' mapped times, ms: half a
    /// probe's round trip plus the drift allowance since it. Every op of this worker happened
    /// within `time ± bound_ms` on the coordinator's clock.
    pub bound_ms: f64,
}

impl WorkerClock {
    /// A worker's entry from nanosecond figures (rounded to µs in the file).
    pub fn new(
        name: &str,
        slots: Vec<u32>,
        probes: u64,
        offset_ns: Option<i64>,
        bound_ns: u64,
    ) -> WorkerClock {
        WorkerClock {
            name: name.into(),
            slots,
            probes,
            offset_ms: offset_ns.map(|o| round3(o as f64 / 1e6)),
            bound_ms: round3(bound_ns as f64 / 1e6),
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section is written with the words SCHEMA.md documents and read back unchanged; a
    /// worker that answered no probe has `offset_ms: null`.
    #[test]
    fn the_section_keeps_the_schema_words() {
        let clocks = Clocks {
            drift_allowance_ppm: 100,
            workers: vec![
                WorkerClock::new("worker-0", vec![0, 2], 12, Some(250_123_456), 180_400),
                WorkerClock::new("worker-1", vec![1], 0, None, 0),
            ],
            judgement: IntervalJudgement {
                bound_ns: 180_400,
                overlaps_ambiguous: 3,
                ..IntervalJudgement::default()
            },
        };
        let v = serde_json::to_value(&clocks).unwrap();
        assert_eq!(v["workers"][0]["offset_ms"], 250.123);
        assert_eq!(v["workers"][0]["bound_ms"], 0.18);
        assert_eq!(v["workers"][0]["slots"], serde_json::json!([0, 2]));
        assert_eq!(v["workers"][1]["offset_ms"], serde_json::Value::Null);
        assert_eq!(v["judgement"]["overlaps_ambiguous"], 3);
        assert_eq!(v["judgement"]["bound_ns"], 180_400);
        let back: Clocks = serde_json::from_value(v).unwrap();
        assert_eq!(back, clocks);
    }
}
