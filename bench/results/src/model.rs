//! The shape of `results.json`. Field names are a contract with users' tools: add fields
//! freely, but rename or remove one only with a `SCHEMA_VERSION` bump (see `SCHEMA.md`).

use crate::status::{Status, Validity};
use hdrhistogram::Histogram;
use lockbench_analysis::availability::{Stall, Window};
use lockbench_core::scenario::Workload;
use lockbench_core::{BackendInfo, FindingKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the `results.json` layout.
pub const SCHEMA_VERSION: u32 = 2;

/// Everything one `lockbench run` produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Scenario seed.
    pub seed: u64,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// `false` while the run is going or when it was interrupted before the last backend.
    pub complete: bool,
    /// `managed` or `external:<file>`.
    pub cluster: String,
    /// How the clients connected to each endpoint group (TLS, mutual TLS, auth, server
    /// name), so two runs are compared on the same footing. Nothing secret. Absent in
    /// files written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connections: BTreeMap<String, lockbench_core::ConnectionSummary>,
    /// Where and on what the run happened.
    pub environment: Environment,
    /// One entry per (backend, workload).
    pub results: Vec<BackendResult>,
    /// Backend x fault matrix: for each cell the runs, the violations by kind, and whether the
    /// backend stayed available. Present when the scenario scheduled faults or ran the fencing
    /// workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorecard: Option<Scorecard>,
    /// `lockbench sweep` only: the knee search's steps and the sizing table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::capacity::Capacity>,
    /// The scenario's expectations (`[expect]`), each judged on the results, backend by
    /// backend; `lockbench run`'s exit code follows from them. Empty until the run ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expectations: Vec<ExpectationResult>,
}

/// One expectation of the scenario, judged on one backend's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpectationResult {
    /// Recipe name.
    pub backend: String,
    /// The `[expect]` key: `safe`, `violated`, `fenced`, `damaged` or `min_throughput`.
    pub expect: String,
    /// `true` for the `safe` expectation every backend has that the scenario did not name in
    /// `safe` nor `violated`.
    #[serde(default)]
    pub implicit: bool,
    /// `met`, `failed`, or `unknown` (the backend did not run, had no verdict, or the fault
    /// meant to break it was not applied).
    pub outcome: crate::expect::Outcome,
    /// What it was judged on, e.g. `3 stale or lost-lock writes rejected, 0 accepted`.
    pub measured: String,
    /// The violation kinds that failed it because nobody expected them: every kind of an
    /// invalid verdict for `safe`, the kinds outside the list for `violated` by kind. The
    /// headline splits the run's violations into expected and unexpected by it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexpected_kinds: Vec<FindingKind>,
}

/// The safety scorecard: one cell per (backend, fault).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    /// The cells, backend-major in the order the backends ran.
    pub cells: Vec<ScoreCell>,
}

/// One (backend, fault) cell of the scorecard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreCell {
    /// Recipe name.
    pub backend: String,
    /// Fault kind (`pause`, `partition`, ...); `<kind>-client` when only client hosts were
    /// targeted (`pause-client` is the fencing workload's pause of the lock holder); `none`
    /// outside every fault window.
    pub fault: lockbench_core::FaultCell,
    /// Fault windows of this kind that were applied.
    pub runs: u64,
    /// Windows that could not be applied here (e.g. partitions without namespaces).
    pub not_applied: u64,
    /// Violations found in the backend's run, by kind: `mutex`, `stale_write_accepted` and
    /// `write_after_lock_lost_accepted` (damage), `token_reuse`, `foreign_release`; a kind
    /// with zero is left out.
    pub violations: BTreeMap<String, u64>,
    /// The same writes stopped by fencing, by kind (`stale_write_rejected`,
    /// `write_after_lock_lost_rejected`): the token doing its job, not damage.
    #[serde(default)]
    pub fenced: BTreeMap<String, u64>,
    /// Every window of this kind was followed by a successful acquisition (`recovery_ms` set)
    /// and no stall alarm fired.
    pub stayed_available: bool,
}

/// The fencing workload's figures beyond the safety counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FencingRun {
    /// How long the holder was stopped after each grant, ms.
    pub pause_ms: f64,
    /// How many times it was stopped.
    pub holder_pauses: u64,
    /// The resource's mode (`fenced` / `unfenced`).
    pub resource: String,
}

/// The machine, the servers and lockbench itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// lockbench's version.
    pub lockbench_version: String,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Operating system (`PRETTY_NAME` from `/etc/os-release`).
    pub os: String,
    /// CPUs available to lockbench.
    pub cpus: usize,
    /// The CPU's model name (`/proc/cpuinfo`); empty where the system does not say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_model: String,
    /// The machine's load average over 1, 5 and 15 minutes (`/proc/loadavg`) when the run
    /// started: a busy machine measures differently. Absent where unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<[f64; 3]>,
    /// The same when the run ended (or was interrupted): with the start's, whether the
    /// machine was busy while it ran. Absent while the run goes on, or where unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_end: Option<[f64; 3]>,
    /// Server versions as the servers report them, by system (`zookeeper`, `etcd`, `redis`).
    pub servers: BTreeMap<String, String>,
}

/// Latency percentiles in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Number of samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
}

/// Failed and indeterminate completions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    /// Definite failures (`fail`) of acquire and release.
    pub fail: u64,
    /// Indeterminate outcomes (`info`), each of which retired a client.
    pub info: u64,
    /// Counts by `<call>/<type>/<kind>`, e.g. `acquire/info/timeout`.
    pub by_kind: BTreeMap<String, u64>,
}

pub use lockbench_analysis::cross_check::Requests;
pub use lockbench_analysis::verdict::{CheckResult, SafetyResult, ServerTruth};

/// The figures for one (backend, workload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendResult {
    /// Recipe name, e.g. `zk-fair`.
    pub backend: String,
    /// Workload name, e.g. `contention`.
    pub workload: String,
    /// `ok`, `interrupted`, or `error` (see `error`).
    pub status: Status,
    /// Why the backend could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Concurrent clients.
    pub clients: u32,
    /// Lock keys.
    pub keys: u32,
    /// Offered rate for open loop, `null` for closed loop.
    pub offered_rate_per_s: Option<f64>,
    /// The delay each client waited inside every acquire on purpose (`workload.slowdown`),
    /// ms: these figures are slowed deliberately. Absent when none was injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_slowdown_ms: Option<f64>,
    /// Length of the measured window, seconds.
    pub measured_s: f64,
    /// Acquisitions in the measured window.
    pub acquisitions: u64,
    /// Acquisitions in the whole run (warm-up included).
    pub acquisitions_total: u64,
    /// `acquisitions / measured_s`.
    pub throughput_per_s: f64,
    /// Acquire latency from the intended start (coordinated-omission corrected).
    pub acquire_latency_us: Option<Percentiles>,
    /// Acquire latency from the moment the call was made (service time).
    pub acquire_service_time_us: Option<Percentiles>,
    /// Release-completes to next-grant latency on contended keys; `null` when no release had
    /// a waiter.
    pub handoff_latency_us: Option<Percentiles>,
    /// Jain's fairness index over per-client measured acquisitions.
    pub fairness_jain: Option<f64>,
    /// Measured acquisitions per client slot.
    pub per_client_acquisitions: Vec<u64>,
    /// Longest acquire wait in the measured window, µs.
    pub longest_wait_us: Option<u64>,
    /// Clients retired after an indeterminate outcome and replaced.
    pub clients_replaced: u32,
    /// Failures and indeterminate outcomes.
    pub errors: Errors,
    /// Safety findings.
    pub safety: SafetyResult,
    /// Requests per acquisition sent to the servers: lockbench's own count when the recipe
    /// can count, else the servers' counter; `null` when neither is available.
    pub server_ops_per_acquisition: Option<f64>,
    /// Both counts, for cross-checking.
    pub requests: Requests,
    /// How the recipe waits, where its token comes from, its knobs.
    pub recipe: Option<BackendInfo>,
    /// Each fault window (from the history's fault events) with success rate and acquire
    /// latency before, during and after it, and the time to the first acquisition after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_windows: Vec<Window>,
    /// Spans of at least the scenario's `stall_alarm` in which no client acquired the lock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
    /// The fencing workload's pause figures (only for `workload = fencing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing: Option<FencingRun>,
    /// The herd workload's notification fan-out figures (only for `workload = herd`, on a
    /// recipe that counts its wake-ups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<Fanout>,
    /// With `lockbench run --repeat N` (N > 1): the key figures of every repetition, the first
    /// being the one this result's other fields describe. `lockbench compare` tests these
    /// samples for significance; absent for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Repetition>,
    /// CPU and memory of the servers and of lockbench over the run, and whether lockbench
    /// was the limit; absent for a backend that could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::resources::ResourceUsage>,
    /// Shared (read/write) lock figures: only when `workload.read_fraction` > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_lock: Option<lockbench_analysis::rwlock::RwLockReport>,
    /// Server-side truth (only with `observe_server = true`): lost-while-held episodes and
    /// how long clients took to learn of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_truth: Option<ServerTruth>,
    /// The failover workload's figures (only for `workload = failover`; `backend` then names
    /// the election recipe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverResult>,
    /// Workers on their own clocks (dialled in from other hosts): each one's offset and
    /// bound, and the history judged over intervals; absent when every op was stamped on the
    /// coordinator's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocks: Option<crate::clocks::Clocks>,
    /// The warm-up rounds run before this backend was measured (`[steady]`): how long, whether
    /// they settled, every round's figures; absent when the scenario has no `[steady]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyWarmup>,
}

/// How a backend was brought to steady state before it was measured
/// ([`lockbench_core::steady`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyWarmup {
    /// `true` when successive rounds agreed within the bound; `false`: measured anyway, after
    /// `max` (or after a round failed, see `error`).
    pub settled: bool,
    /// Wall time the warm-up took, s.
    pub seconds: f64,
    /// Every round's figures, in order.
    pub rounds: Vec<lockbench_core::steady::Round>,
    /// Why the warm-up stopped early: a round that failed (its error is then the backend's
    /// result), or its scratch directory could not be made (measured anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Leader-election figures of one recipe (the failover workload): the checker's figures
/// (`lockbench_analysis::failover`) plus how the run was set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailoverResult {
    /// Candidates (each its own process).
    pub candidates: u32,
    /// How the recipe elects, where its epoch comes from, what ends a dead leader's term.
    pub recipe: lockbench_core::ElectionInfo,
    /// What the checker found.
    #[serde(flatten)]
    pub figures: lockbench_analysis::failover::FailoverFigures,
}

/// Notification fan-out per release (the herd workload). Every figure is a difference of two
/// cumulative readings taken before the first client connected and after the last one closed,
/// divided by `releases`: the successful releases in the whole run (warm-up included), the
/// same span the counters cover. Every field has a default, so a reader also accepts a
/// `fanout` object written by another version (missing fields read as `0` / `null`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fanout {
    /// Successful releases in the whole run.
    pub releases: u64,
    /// Watch notifications handed to waiting clients by their library, per release.
    pub notifications_per_release: Option<f64>,
    /// Notifications after which the client still was not first in line, per release.
    pub wasted_wakeups_per_release: Option<f64>,
    /// Requests clients sent in reaction to a notification (re-checks, new watches), per
    /// release: the server work a release causes beyond its own delete.
    pub server_requests_per_release: Option<f64>,
    /// The servers' own count of watch notifications sent, per release; `null` when the
    /// servers could not be read (see `server_error`).
    pub server_notifications_per_release: Option<f64>,
    /// Watches registered on the servers, sampled mid-run (a gauge; the whole cluster's).
    pub server_watches_mid_run: Option<u64>,
    /// Where the server-side figures come from.
    pub server_source: String,
    /// Why the server-side figures are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
}

/// One repetition's key figures (see [`BackendResult::repetitions`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repetition {
    /// `ok`, `interrupted` or `error`.
    pub status: Status,
    /// Acquisitions per second in the measured window.
    pub throughput_per_s: f64,
    /// Acquire latency (coordinated-omission corrected), µs.
    pub acquire_latency_us: Option<Percentiles>,
    /// Hand-off latency, µs.
    pub handoff_latency_us: Option<Percentiles>,
    /// Safety violations that did damage: mutex violations + reader/writer conflicts + stale
    /// writes accepted + writes after the lock was lost that the resource accepted + releases
    /// of another client's lock.
    pub violations: u64,
    /// The repetition's safety verdict.
    pub verdict: Validity,
    /// Its violations by kind ([`SafetyResult::violation_kinds`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub violation_kinds: BTreeMap<String, u64>,
}

impl Repetition {
    /// The figures of one repetition's full result.
    pub fn of(r: &BackendResult) -> Repetition {
        Repetition {
            status: r.status,
            throughput_per_s: r.throughput_per_s,
            acquire_latency_us: r.acquire_latency_us.clone(),
            handoff_latency_us: r.handoff_latency_us.clone(),
            violations: r.safety.damage(),
            verdict: r.safety.verdict,
            violation_kinds: r.safety.violation_kinds.clone(),
        }
    }
}

impl Percentiles {
    /// Percentiles of a histogram, or `None` when it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        (!h.is_empty()).then(|| Percentiles {
            count: h.len(),
            mean: (h.mean() * 10.0).round() / 10.0,
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        })
    }
}

/// An injected slowdown in milliseconds as it is printed: to the microsecond, without
/// trailing zeros (`0.811 ms`, `2.5 ms`).
pub fn slowdown_label(ms: f64) -> String {
    let fixed = format!("{ms:.3}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed} ms")
}

/// `workload.slowdown` in ms, as results carry it (resolved for one backend).
pub fn slowdown_ms(workload: &Workload) -> Option<f64> {
    workload
        .slowdown
        .as_ref()
        .and_then(|s| s.fixed())
        .map(|d| d.as_secs_f64() * 1e3)
}

impl BackendResult {
    /// A result for a backend that could not run at all: status `error`, verdict `unknown`.
    pub fn failed(backend: &str, workload: &Workload, error: String) -> BackendResult {
        BackendResult {
            backend: backend.into(),
            workload: workload.kind.name().into(),
            status: Status::Error,
            error: Some(error),
            clients: workload.clients,
            keys: workload.keys,
            offered_rate_per_s: workload.rate,
            injected_slowdown_ms: slowdown_ms(workload),
            measured_s: 0.0,
            acquisitions: 0,
            acquisitions_total: 0,
            throughput_per_s: 0.0,
            acquire_latency_us: None,
            acquire_service_time_us: None,
            handoff_latency_us: None,
            fairness_jain: None,
            per_client_acquisitions: Vec::new(),
            longest_wait_us: None,
            clients_replaced: 0,
            errors: Errors::default(),
            safety: SafetyResult {
                verdict: Validity::Unknown,
                mutex_violations: 0,
                overlapping_grants: 0,
                overlap_ms: 0.0,
                max_overlap_ms: 0.0,
                locks_lost: 0,
                stale_writes_accepted: 0,
                stale_writes_rejected: 0,
                writes_after_lock_lost: 0,
                writes_after_lock_lost_accepted: 0,
                unfenced_writes: 0,
                token_reuses: 0,
                foreign_releases: 0,
                foreign_renews: 0,
                rw_conflicts: 0,
                instrument_faults: 0,
                stale_writes_ambiguous: 0,
                failed_checkers: vec!["backend did not run".into()],
                violation_kinds: Default::default(),
                outside_fault_windows: Default::default(),
                first_violations: Vec::new(),
                fenced_outside_fault_windows: Default::default(),
                checks: Default::default(),
            },
            server_ops_per_acquisition: None,
            requests: Requests {
                client_counted: None,
                server_counted: None,
                server_source: String::new(),
                server_error: None,
                server_unknown: None,
                unseen: None,
                server_per_acquisition: None,
                client_per_acquisition: None,
            },
            recipe: None,
            fault_windows: Vec::new(),
            repetitions: Vec::new(),
            resources: None,
            stalls: Vec::new(),
            fencing: None,
            fanout: None,
            failover: None,
            shared_lock: None,
            server_truth: None,
            clocks: None,
            steady: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::{Capacity, SizingRow, SizingVerdict};

    /// The typed fields are written as the words `SCHEMA.md` documents, and read back.
    #[test]
    fn typed_fields_keep_the_schema_words() {
        let text = "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 2\nkeys = 1\n";
        let scenario = lockbench_core::Scenario::load("t", text, &[]).unwrap();
        let mut r = BackendResult::failed("zk-fair", &scenario.workload, "boom".into());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], "error");
        assert_eq!(v["safety"]["verdict"], "unknown");
        r.status = Status::Interrupted;
        r.safety.verdict = Validity::Invalid;
        r.repetitions = vec![Repetition::of(&r)];
        let results = RunResults {
            schema_version: SCHEMA_VERSION,
            scenario: "t".into(),
            seed: 1,
            started_at: String::new(),
            complete: true,
            cluster: "managed".into(),
            connections: BTreeMap::new(),
            environment: crate::environment::detect(Default::default()),
            results: vec![r],
            scorecard: None,
            capacity: Some(Capacity {
                sizing: vec![SizingRow {
                    verdict: SizingVerdict::GeneratorBound,
                    ..SizingRow::default()
                }],
                ..Capacity::default()
            }),
            expectations: Vec::new(),
        };
        let v = serde_json::to_value(&results).unwrap();
        assert_eq!(v["results"][0]["status"], "interrupted");
        assert_eq!(v["results"][0]["safety"]["verdict"], "invalid");
        assert_eq!(v["results"][0]["repetitions"][0]["status"], "interrupted");
        assert_eq!(v["results"][0]["repetitions"][0]["verdict"], "invalid");
        assert_eq!(v["capacity"]["sizing"][0]["verdict"], "generator-bound");
        let back: RunResults = serde_json::from_value(v).unwrap();
        assert_eq!(back, results);
    }
}
