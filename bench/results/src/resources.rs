//! The `resources` field of a result: what the servers and lockbench itself used while a
//! backend ran, sampled from `/proc`, and whether the load generator (not the backend) was the
//! limit. Why it is in every result: a throughput figure is only the backend's if lockbench had
//! CPU to spare; on a small machine the generator and the servers share the cores.

use serde::{Deserialize, Serialize};

/// CPU and memory over one backend's run (see `SCHEMA.md`, "resources").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceUsage {
    /// Time between samples, ms.
    pub interval_ms: u64,
    /// CPUs of the machine (100% CPU = one core busy).
    pub cpus: usize,
    /// When each sample was taken, seconds on the run clock (the same clock as the history).
    pub sample_times_s: Vec<f64>,
    /// Whole-machine CPU busy per sample, percent of all CPUs (from `/proc/stat`).
    pub machine_cpu_percent: Vec<f64>,
    /// One entry per sampled process (or process tree for lockbench and its workers).
    pub processes: Vec<ProcessUsage>,
    /// How late a timer on lockbench's runtime fired (a 5 ms sleep, probed continuously over
    /// the measured window): the open-loop pacer's own lag. p99, ms.
    pub timer_lag_p99_ms: Option<f64>,
    /// ... and the worst, ms.
    pub timer_lag_max_ms: Option<f64>,
    /// `true` when the load generator, not the backend, was the limit in the measured window
    /// (see `generator_notes` for why).
    pub generator_bound: bool,
    /// The reasons `generator_bound` is set; empty when it is not.
    pub generator_notes: Vec<String>,
}

/// One process (or lockbench's process tree) over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessUsage {
    /// `lockbench` (itself and its worker processes), or the server's name (`zk1`, `redis`).
    pub name: String,
    /// `generator` or `server`.
    pub role: String,
    /// The pids sampled (lockbench: itself first, then its descendants seen).
    pub pids: Vec<u32>,
    /// CPU per sample over the interval before it, percent of one core.
    pub cpu_percent: Vec<f64>,
    /// Resident memory per sample, MiB.
    pub rss_mib: Vec<f64>,
    /// Mean CPU over the samples in the measured window, percent of one core.
    pub cpu_percent_mean: f64,
    /// Highest per-sample CPU in the measured window.
    pub cpu_percent_max: f64,
    /// Highest resident memory seen, MiB.
    pub rss_mib_max: f64,
    /// lockbench only: the busiest single thread's mean CPU in the measured window (a
    /// thread near 100% is a bottleneck even with cores to spare).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_thread_cpu_percent: Option<f64>,
}

impl ResourceUsage {
    /// The entries of role `server`.
    pub fn servers(&self) -> impl Iterator<Item = &ProcessUsage> {
        self.processes.iter().filter(|p| p.role == "server")
    }

    /// Summed mean CPU of the servers in the measured window, percent of one core.
    pub fn server_cpu_percent(&self) -> f64 {
        self.servers().map(|p| p.cpu_percent_mean).sum()
    }

    /// Summed peak resident memory of the servers, MiB.
    pub fn server_rss_mib(&self) -> f64 {
        self.servers().map(|p| p.rss_mib_max).sum()
    }

    /// The whole machine's mean CPU in the measured window, percent of all CPUs.
    pub fn machine_cpu_mean(&self) -> Option<f64> {
        let m = &self.machine_cpu_percent;
        (!m.is_empty()).then(|| m.iter().sum::<f64>() / m.len() as f64)
    }

    /// lockbench's (with its workers) mean CPU in the measured window, percent of one core.
    pub fn generator_cpu_percent(&self) -> f64 {
        self.processes
            .iter()
            .filter(|p| p.role == "generator")
            .map(|p| p.cpu_percent_mean)
            .sum()
    }

    /// lockbench's and the servers' CPU per acquisition over the measured window, at
    /// `acquisitions_per_s` (the same window's throughput): `None` when nothing was sampled or
    /// acquired, or the servers were not sampled (not the managed cluster).
    pub fn cpu_per_acquisition(&self, acquisitions_per_s: f64) -> Option<CpuPerAcquisition> {
        if self.interval_ms == 0 || acquisitions_per_s <= 0.0 || self.servers().next().is_none() {
            return None;
        }
        let micros = |percent: f64| percent / 100.0 / acquisitions_per_s * 1e6;
        Some(CpuPerAcquisition {
            lockbench_us: micros(self.generator_cpu_percent()),
            servers_us: micros(self.server_cpu_percent()),
        })
    }
}

/// CPU time per acquisition, from one run's samples: whether lockbench is lighter than the
/// servers it measures (on a small machine they share the cores, so a heavier harness takes
/// them from the servers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuPerAcquisition {
    /// lockbench (with its worker processes), µs of CPU per acquisition.
    pub lockbench_us: f64,
    /// The backend's servers together, µs of CPU per acquisition.
    pub servers_us: f64,
}
