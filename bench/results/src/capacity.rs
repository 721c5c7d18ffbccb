//! The `capacity` field of a sweep's `results.json`: every step of every grid point's
//! offered-rate search, the knee found, and the sizing table built from the knees. The search
//! itself is in `lockbench-capacity`; this is only its recorded shape (see `SCHEMA.md`,
//! "capacity").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a sweep found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capacity {
    /// The objective: p99 acquire latency (from the intended start), ms.
    pub slo_p99_ms: f64,
    /// A step is sustained when achieved >= (1 - tolerance) x offered.
    pub tolerance: f64,
    /// ... and at most this fraction of its acquires failed.
    pub max_error_rate: f64,
    /// The grid dimensions, as given (`path=v1,v2`).
    pub vary: Vec<String>,
    /// One sizing row per (backend, grid point), in the order they ran.
    pub sizing: Vec<SizingRow>,
    /// Every grid point with all its steps.
    pub points: Vec<SweepPoint>,
}

/// One row of the sizing table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SizingRow {
    /// Recipe name.
    pub backend: String,
    /// The grid point's values by path (e.g. `workload.keys` = `16`).
    pub point: BTreeMap<String, String>,
    /// Clients and keys at this point.
    pub clients: u32,
    /// Lock keys.
    pub keys: u32,
    /// `ok`, `generator-bound`, `not-reached`, `none`, `error` or `interrupted` (see
    /// [`SizingVerdict`]).
    pub verdict: SizingVerdict,
    /// The highest offered rate sustained within the objective, acquisitions/s.
    pub max_rate_per_s: Option<f64>,
    /// The lowest rate that was not sustained, acquisitions/s.
    pub first_failed_rate_per_s: Option<f64>,
    /// The knee step (the last step at `max_rate_per_s`): its figures, its servers' CPU and
    /// memory, lockbench's CPU, requests per acquisition; `null` without a knee.
    pub knee: Option<SweepStep>,
    /// What limited the search (the failing step's reasons, or why there is no knee).
    pub note: String,
}

/// How far a grid point's knee can be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizingVerdict {
    /// The knee is the backend's: the failure above it was not lockbench's doing.
    Ok,
    /// lockbench being the limit could explain the failure above the knee (or the top step
    /// when none failed), or lockbench was at its limit at the failure above the knee and at a
    /// sustained step (every step, when none was sustained): the rate is only a lower bound.
    GeneratorBound,
    /// Every rate tried was sustained: a lower bound.
    NotReached,
    /// Not even the lowest rate tried was sustained.
    None,
    /// A step could not run (the row's `note` says why).
    #[default]
    Error,
    /// Ctrl-C cut the search short.
    Interrupted,
}

impl SizingVerdict {
    /// The word `results.json` uses.
    pub fn name(self) -> &'static str {
        match self {
            SizingVerdict::Ok => "ok",
            SizingVerdict::GeneratorBound => "generator-bound",
            SizingVerdict::NotReached => "not-reached",
            SizingVerdict::None => "none",
            SizingVerdict::Error => "error",
            SizingVerdict::Interrupted => "interrupted",
        }
    }
}

/// One grid point of one backend: the search's steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepPoint {
    /// Recipe name.
    pub backend: String,
    /// The grid point's values by path.
    pub point: BTreeMap<String, String>,
    /// Every step, in the order it ran.
    pub steps: Vec<SweepStep>,
}

/// One short run of a search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepStep {
    /// `probe` (closed loop, to find where to start), `ramp`, `bisect` or `listed`.
    pub phase: String,
    /// Offered rate, acquisitions/s; `null` for the closed-loop probe.
    pub offered_per_s: Option<f64>,
    /// Achieved rate in the measured window.
    pub achieved_per_s: f64,
    /// Acquisitions in the measured window.
    pub acquisitions: u64,
    /// Corrected acquire latency (from the intended start), ms.
    pub p50_ms: Option<f64>,
    /// Corrected p99, ms.
    pub p99_ms: Option<f64>,
    /// Uncorrected acquire latency (from the call: what a closed-loop tool would report), ms.
    pub p50_service_ms: Option<f64>,
    /// Uncorrected p99, ms.
    pub p99_service_ms: Option<f64>,
    /// Failed and indeterminate acquires and releases.
    pub errors: u64,
    /// Sustained within the objective (the probe is never judged: `false`).
    pub sustained: bool,
    /// Why not, when not.
    pub reasons: Vec<String>,
    /// lockbench was the limit in this step (see its `resources`); for a step that was not
    /// sustained, only when that could explain the miss (CPU saturation, or timer lag at least
    /// as large as the p99's excess over the objective with the rate kept up).
    pub generator_bound: bool,
    /// Why (the step's `resources.generator_notes`); empty when it was not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub generator_notes: Vec<String>,
    /// The step's run directory, relative to the sweep directory.
    pub run_dir: String,
    /// The servers' summed mean CPU, percent of one core.
    pub server_cpu_percent: Option<f64>,
    /// The servers' summed peak resident memory, MiB.
    pub server_rss_mib: Option<f64>,
    /// lockbench's mean CPU, percent of one core.
    pub generator_cpu_percent: Option<f64>,
    /// The whole machine's mean CPU, percent of all CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_cpu_percent: Option<f64>,
    /// Requests per acquisition.
    pub requests_per_acquisition: Option<f64>,
}
