//! Test fixtures: a `results.json` of a few backends' throughputs, nothing else measured.

use crate::RunResults;

/// A run of `scenario` with each (backend, throughput) of `throughputs` on the contention
/// workload, `ok` and safe.
pub(crate) fn run(scenario: &str, throughputs: &[(&str, f64)]) -> RunResults {
    let results: Vec<serde_json::Value> = throughputs
        .iter()
        .map(|(backend, t)| {
            serde_json::json!({
                "backend": backend, "workload": "contention", "status": "ok",
                "clients": 8, "keys": 1, "offered_rate_per_s": null, "measured_s": 5.0,
                "acquisitions": 10, "acquisitions_total": 12, "throughput_per_s": t,
                "acquire_latency_us": null, "acquire_service_time_us": null,
                "handoff_latency_us": null, "fairness_jain": null,
                "per_client_acquisitions": [], "longest_wait_us": null,
                "clients_replaced": 0, "errors": {"fail": 0, "info": 0, "by_kind": {}},
                "safety": {"verdict": "valid", "mutex_violations": 0, "overlap_ms": 0.0,
                    "max_overlap_ms": 0.0, "locks_lost": 0, "stale_writes_accepted": 0,
                    "stale_writes_rejected": 0, "unfenced_writes": 0, "failed_checkers": []},
                "server_ops_per_acquisition": null,
                "requests": {"client_counted": null, "server_counted": null,
                    "server_source": "", "server_per_acquisition": null,
                    "client_per_acquisition": null},
                "recipe": null
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "schema_version": 2, "scenario": scenario, "seed": 1,
        "started_at": "2026-01-01T00:00:00Z", "complete": true, "cluster": "managed",
        "environment": {"lockbench_version": "0", "kernel": "6.1", "os": "Debian",
            "cpus": 2, "servers": {}},
        "results": results
    }))
    .expect("a results.json")
}
