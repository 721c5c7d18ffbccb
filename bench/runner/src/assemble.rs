//! Assembles a [`BackendResult`] from what was measured and the verdict the analysis gave
//! (`lockbench_analysis::verdict`).
//!
//! It lives with the runner, not with the results model, because it reads the client loop's
//! [`RunOutput`]: the model (`lockbench-results`) stays free of the runtime.

use hdrhistogram::Histogram;
use lockbench_analysis::cross_check::CounterReadings;
use lockbench_analysis::fairness;
use lockbench_analysis::pass::Analysed;
use lockbench_core::scenario::Workload;
use lockbench_core::{BackendInfo, OpType, ServerFanout, Wakeups};
use lockbench_results::Status;
use lockbench_results::model::{BackendResult, Errors, Fanout, Percentiles};
use lockbench_workloads::RunOutput;

/// Everything [`backend_result`] needs about one finished run.
#[derive(Debug)]
pub struct Measured<'a> {
    /// The recipe.
    pub info: &'a BackendInfo,
    /// The workload it ran.
    pub workload: &'a Workload,
    /// The client loop's output.
    pub output: &'a RunOutput,
    /// What the pass over the history found (see `lockbench_analysis::pass`).
    pub analysed: Analysed,
    /// Server counters around the run.
    pub counters: &'a CounterReadings,
}

/// Builds the result of one (backend, workload) run.
pub fn backend_result(m: Measured<'_>) -> (BackendResult, Histogram<u64>) {
    let out = m.output;
    let latency = out.acquire_latency();
    let service = out.acquire_service();
    let analysed = m.analysed;
    let handoffs = analysed.handoffs;
    let measured_s = out.measured().as_secs_f64();
    let acquisitions = out.acquisitions();
    let total = out.acquisitions_total();
    let per_client: Vec<u64> = out.workers.iter().map(|w| w.acquisitions).collect();

    let mut errors = Errors::default();
    for ((f, ty, kind), n) in out.errors() {
        match ty {
            OpType::Info => errors.info += n,
            OpType::Fail => errors.fail += n,
            _ => {}
        }
        let name = format!("{}/{}/{}", op_name(f), op_type_name(ty), kind.name());
        *errors.by_kind.entry(name).or_insert(0) += n;
    }

    let requests =
        lockbench_analysis::cross_check::requests(out.requests_sent(), m.counters, total);
    // Each violation is charged to the fault window it happened in (or to none).
    let mut fault_windows = analysed.windows;
    let safety =
        lockbench_analysis::verdict::judge(analysed.outcomes, &mut fault_windows, &requests);
    let server_ops_per_acquisition = requests
        .client_per_acquisition
        .or(requests.server_per_acquisition);
    let result = BackendResult {
        backend: m.info.backend.name().into(),
        workload: m.workload.kind.name().into(),
        status: if out.interrupted {
            Status::Interrupted
        } else {
            Status::Ok
        },
        error: None,
        clients: m.workload.clients,
        keys: m.workload.keys,
        offered_rate_per_s: m.workload.rate,
        injected_slowdown_ms: lockbench_results::model::slowdown_ms(m.workload),
        measured_s: round3(measured_s),
        acquisitions,
        acquisitions_total: total,
        throughput_per_s: if measured_s > 0.0 {
            round3(acquisitions as f64 / measured_s)
        } else {
            0.0
        },
        acquire_latency_us: Percentiles::of(&latency),
        acquire_service_time_us: Percentiles::of(&service),
        handoff_latency_us: Percentiles::of(&handoffs),
        fairness_jain: fairness::jain(&per_client).map(round3),
        per_client_acquisitions: per_client,
        longest_wait_us: (!latency.is_empty()).then(|| latency.max()),
        clients_replaced: out.workers.iter().map(|w| w.clients_replaced).sum(),
        errors,
        safety,
        server_ops_per_acquisition: server_ops_per_acquisition.map(round3),
        requests,
        recipe: Some(m.info.clone()),
        fault_windows,
        repetitions: Vec::new(),
        resources: None,
        stalls: analysed.stalls,
        fencing: None,
        fanout: None,
        failover: None,
        shared_lock: analysed.shared_lock,
        server_truth: None,
        clocks: None,
        steady: None,
    };
    (result, handoffs)
}

/// The servers' fan-out counters read around a run, and the watch gauge sampled mid-run.
#[derive(Debug, Clone)]
pub struct FanoutReadings {
    /// Client-counted wake-ups before the first client connected.
    pub before: Wakeups,
    /// Client-counted wake-ups after the last client closed.
    pub after: Wakeups,
    /// The servers' notification counters before.
    pub server_before: Result<Option<ServerFanout>, String>,
    /// The servers' notification counters after.
    pub server_after: Result<Option<ServerFanout>, String>,
    /// The servers' counters sampled in the middle of the measured window (for the watch
    /// gauge), if a sample was taken.
    pub server_mid_run: Option<Result<Option<ServerFanout>, String>>,
}

/// The `fanout` figures: counter deltas over the run divided by the successful `releases` in
/// the whole history (the span the counters cover).
pub fn fanout(readings: &FanoutReadings, releases: u64) -> Fanout {
    let per = |n: u64| (releases > 0).then(|| round3(n as f64 / releases as f64));
    let d = readings.after.since(readings.before);
    let (server, source, error) = match (&readings.server_before, &readings.server_after) {
        (Ok(Some(b)), Ok(Some(a))) => (
            Some(a.notifications.saturating_sub(b.notifications)),
            a.source.clone(),
            None,
        ),
        (Ok(_), Ok(_)) => (None, String::new(), None),
        (Err(e), _) | (_, Err(e)) => (None, String::new(), Some(e.clone())),
    };
    let watches = match &readings.server_mid_run {
        Some(Ok(Some(s))) => Some(s.watches),
        _ => None,
    };
    Fanout {
        releases,
        notifications_per_release: per(d.notifications),
        wasted_wakeups_per_release: per(d.wasted),
        server_requests_per_release: per(d.requests),
        server_notifications_per_release: server.and_then(per),
        server_watches_mid_run: watches,
        server_source: source,
        server_error: error,
    }
}

fn op_name(f: lockbench_core::OpF) -> &'static str {
    f.name()
}

fn op_type_name(t: OpType) -> &'static str {
    match t {
        OpType::Invoke => "invoke",
        OpType::Ok => "ok",
        OpType::Fail => "fail",
        OpType::Info => "info",
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
