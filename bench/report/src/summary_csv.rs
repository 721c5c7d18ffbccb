//! `summary.csv`: the summary table for machines (a CI system's chart, a spreadsheet): one
//! row per backend with the table's columns, numbers unformatted (latencies in microseconds as
//! in results.json, rates and ratios as measured), an empty field where the table shows `-`.
//! The terminal table's rounding and units are for reading; these are for computing.

use lockbench_results::model::{BackendResult, Percentiles, RunResults};

/// The header row.
pub const COLUMNS: [&str; 21] = [
    "backend",
    "workload",
    "status",
    "clients",
    "keys",
    "throughput_per_s",
    "acquire_p50_us",
    "acquire_p90_us",
    "acquire_p99_us",
    "acquire_p999_us",
    "acquire_max_us",
    "handoff_p50_us",
    "handoff_p99_us",
    "fairness_jain",
    "errors_fail",
    "errors_info",
    "client_requests_per_acquisition",
    "server_requests_per_acquisition",
    "safety",
    "violations",
    "error",
];

/// The whole file: the header, then one row per result in the run's order.
pub fn render(results: &RunResults) -> anyhow::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(COLUMNS)?;
    for r in &results.results {
        out.write_record(row(r))?;
    }
    Ok(String::from_utf8(out.into_inner()?)?)
}

fn row(r: &BackendResult) -> [String; COLUMNS.len()] {
    let pct = |p: &Option<Percentiles>, f: fn(&Percentiles) -> u64| {
        p.as_ref().map(|p| f(p).to_string()).unwrap_or_default()
    };
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let a = &r.acquire_latency_us;
    let h = &r.handoff_latency_us;
    [
        r.backend.clone(),
        r.workload.clone(),
        r.status.name().to_string(),
        r.clients.to_string(),
        r.keys.to_string(),
        r.throughput_per_s.to_string(),
        pct(a, |p| p.p50),
        pct(a, |p| p.p90),
        pct(a, |p| p.p99),
        pct(a, |p| p.p999),
        pct(a, |p| p.max),
        pct(h, |p| p.p50),
        pct(h, |p| p.p99),
        num(r.fairness_jain),
        r.errors.fail.to_string(),
        r.errors.info.to_string(),
        num(r.requests.client_per_acquisition),
        num(r.requests.server_per_acquisition),
        r.safety.verdict.name().to_string(),
        r.safety.violated_kinds().join(" "),
        r.error.clone().unwrap_or_default(),
    ]
}
