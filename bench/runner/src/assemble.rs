//! Assembles a [`BackendResult`] from what was measured and what the checkers found.
//!
//! It lives with the runner, not with the results model, because it reads the client loop's
//! [`RunOutput`]: the model (`lockbench-results`) stays free of the runtime.

use hdrhistogram::Histogram;
use lockbench_analysis::attribution::Tally;
use lockbench_analysis::figures::Reports;
use lockbench_analysis::pass::Analysed;
use lockbench_analysis::{Safety, attribution, checker, fairness};
use lockbench_core::scenario::Workload;
use lockbench_core::{BackendInfo, OpType, ServerCounters, ServerFanout, Wakeups};
use lockbench_results::model::{
    BackendResult, CheckResult, Errors, Fanout, Percentiles, SafetyResult,
};
use lockbench_results::{Status, Validity};
use lockbench_workloads::RunOutput;

/// The servers' request counters read before and after a run.
#[derive(Debug, Clone)]
pub struct CounterReadings {
    /// Before the first client connected.
    pub before: Result<ServerCounters, String>,
    /// After the last client closed.
    pub after: Result<ServerCounters, String>,
    /// Requests the server-side observer sent, which the servers counted too: taken off
    /// their count.
    pub observer_requests: u64,
}

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

    // Each violation is charged to the fault window it happened in (or to none).
    let checked = Safety::from_outcomes(analysed.outcomes);
    let mut fault_windows = analysed.windows;
    let (violations, fenced) = (
        attribution::violations(&checked),
        attribution::fenced(&checked),
    );
    let outside = attribution::attribute(&mut fault_windows, &violations, Tally::Violations);
    let fenced_outside = attribution::attribute(&mut fault_windows, &fenced, Tally::Fenced);
    let mut safety = safety_result(checked);
    for (kind, _) in &violations {
        *safety.violation_kinds.entry(kind.to_string()).or_insert(0) += 1;
    }
    safety.outside_fault_windows = outside;
    safety.fenced_outside_fault_windows = fenced_outside;

    let requests = crate::cross_check::requests(out.requests_sent(), m.counters, total);
    if let Some(why) = &requests.unseen {
        safety.failed_checkers.push(format!("server count: {why}"));
        if safety.verdict == Validity::Valid {
            safety.verdict = Validity::Unknown;
        }
    }
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

/// The `server_truth` figures of a run whose servers were observed: the checker
/// (`lockbench_analysis::truth`) over `history`, with the observer's note and requests.
pub fn server_truth(
    history: &lockbench_core::History,
    note: Option<String>,
    observer_requests: u64,
) -> lockbench_results::model::ServerTruth {
    let figures = lockbench_analysis::truth::check(history);
    let note = match (note, &figures) {
        (None, None) => Some("the observer recorded nothing".to_string()),
        (note, _) => note,
    };
    lockbench_results::model::ServerTruth {
        note,
        observer_requests,
        figures,
    }
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

fn safety_result(s: Safety) -> SafetyResult {
    let o = s.outcomes.as_slice();
    let m = o.mutex().cloned().unwrap_or_default();
    let f = o.fencing().cloned().unwrap_or_default();
    let l = o.lost().cloned().unwrap_or_default();
    let a = o.audit().cloned().unwrap_or_default();
    let rel = o.release().cloned().unwrap_or_default();
    let rw = o.rwlock().cloned().unwrap_or_default();
    let checks = s
        .outcomes
        .iter()
        .filter(|o| !checker::BUILT_IN.contains(&o.name))
        .map(|o| {
            let check = CheckResult {
                validity: o.validity,
                figures: o.figures.to_json(),
                note: o.note.clone(),
            };
            (o.name.to_string(), check)
        })
        .collect();
    SafetyResult {
        verdict: s.verdict,
        mutex_violations: m.violations,
        overlapping_grants: m.overlapping_grants,
        // To the nanosecond: an episode of a few µs must not read 0.
        overlap_ms: round6(m.overlap_ms),
        max_overlap_ms: round6(m.max_overlap_ms),
        locks_lost: m.locks_lost,
        stale_writes_accepted: f.stale_writes_accepted,
        stale_writes_rejected: f.stale_writes_rejected,
        writes_after_lock_lost: l.writes_after_lock_lost,
        writes_after_lock_lost_accepted: l.accepted,
        unfenced_writes: f.unfenced_writes,
        token_reuses: f.token_reuses,
        foreign_releases: rel.foreign_releases,
        foreign_renews: rel.foreign_renews,
        rw_conflicts: rw.reader_writer_conflicts,
        instrument_faults: a.faults,
        stale_writes_ambiguous: a.ambiguous,
        failed_checkers: s.failed_checkers,
        violation_kinds: Default::default(),
        outside_fault_windows: Default::default(),
        fenced_outside_fault_windows: Default::default(),
        checks,
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

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
