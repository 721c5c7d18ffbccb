//! The HTML report, rendered from run directories written into a temp dir: a small synthetic
//! history with a deliberate overlap, a stale write and a fault window, plus `results.json`
//! with fields the renderer has no dedicated view for.

mod chromium;
mod escaping;

use hdrhistogram::Histogram;
use lockbench_report::RunDir;
use lockbench_report::html::{write_index, write_report};
use serde_json::json;
use std::path::{Path, PathBuf};

/// One backend's result as `results.json` holds it.
fn result(backend: &str, verdict: &str, violations: u64) -> serde_json::Value {
    let p = json!({"count": 100, "mean": 1500.0, "p50": 1200, "p90": 2000, "p99": 4000, "p999": 6000, "max": 7000});
    json!({
        "backend": backend, "workload": "contention", "status": "ok",
        "clients": 2, "keys": 1, "offered_rate_per_s": null, "measured_s": 1.0,
        "acquisitions": 100, "acquisitions_total": 120, "throughput_per_s": 100.0,
        "acquire_latency_us": p, "acquire_service_time_us": p, "handoff_latency_us": p,
        "fairness_jain": 0.98, "per_client_acquisitions": [55, 45], "longest_wait_us": 7000,
        "clients_replaced": 0,
        "errors": {"fail": 0, "info": 1, "by_kind": {"acquire/info/timeout": 1}},
        "safety": {"verdict": verdict, "mutex_violations": violations, "overlap_ms": 3.0,
                   "max_overlap_ms": 3.0, "locks_lost": 0, "stale_writes_accepted": violations,
                   "stale_writes_rejected": 1, "unfenced_writes": 0, "failed_checkers": []},
        "server_ops_per_acquisition": 2.0,
        "requests": {"client_counted": 240, "server_counted": 250, "server_source": "redis INFO",
                     "client_per_acquisition": 2.0, "server_per_acquisition": 2.08},
        "recipe": {"backend": backend, "waits_by": "polling", "fencing": "counter",
                   "knobs": [["ttl", "10s"]]},
        "fanout": {"releases": 10, "notifications_per_release": 19.0,
                   "server_notifications_per_release": 19.5, "wasted_wakeups_per_release": 18.0,
                   "server_requests_per_release": 19.25, "server_source": "test counters"},
        "future_field": {"wakeups_per_release": 1.0, "herd": false}
    })
}

/// A history line of `backend`.
fn op(
    backend: &str,
    t_ms: f64,
    client: u32,
    ty: &str,
    f: &str,
    extra: serde_json::Value,
) -> String {
    let mut v = json!({"backend": backend, "t": (t_ms * 1e6) as u64, "client": client, "type": ty, "f": f, "key": 0});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

/// Back-to-back holds by alternating clients on one key, each writing its token; when
/// `overlap` is set, client 7 is granted at 251.5 ms while client 1 holds (251..252 ms), and
/// writes a stale token the resource accepts and another it rejects.
fn history(backend: &str, overlap: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut token = 1u64;
    let mut t = 1.0;
    while t < 1500.0 {
        let c = (token % 2) as u32;
        lines.push(op(backend, t, c, "invoke", "acquire", json!({})));
        lines.push(op(
            backend,
            t + 1.0,
            c,
            "ok",
            "acquire",
            json!({"token": token}),
        ));
        lines.push(op(
            backend,
            t + 1.2,
            c,
            "ok",
            "write",
            json!({"token": token, "stale": false}),
        ));
        lines.push(op(backend, t + 2.0, c, "invoke", "release", json!({})));
        lines.push(op(backend, t + 2.5, c, "ok", "release", json!({})));
        token += 1;
        t += 3.0;
    }
    if overlap {
        lines.push(op(backend, 250.0, 7, "invoke", "acquire", json!({})));
        lines.push(op(backend, 251.5, 7, "ok", "acquire", json!({"token": 2})));
        lines.push(op(
            backend,
            251.6,
            7,
            "ok",
            "write",
            json!({"token": 2, "stale": true}),
        ));
        lines.push(op(
            backend,
            251.7,
            7,
            "fail",
            "write",
            json!({"token": 1, "stale": true}),
        ));
        lines.push(op(backend, 253.0, 7, "invoke", "release", json!({})));
    }
    // Fault events as the nemesis writes them (`RunDir::append_fault`).
    for (t, phase) in [(600_000_000u64, "start"), (900_000_000, "stop")] {
        lines.push(
            json!({"backend": backend, "type": "nemesis", "t": t, "fault": "pause", "phase": phase,
                          "targets": ["client1"], "note": "SIGSTOP", "applied": true})
            .to_string(),
        );
    }
    lines.push(r#"{"type":"nemesis","unexpected":"shape"}"#.into());
    lines.sort_by_key(|l| {
        serde_json::from_str::<serde_json::Value>(l)
            .ok()
            .and_then(|v| v["t"].as_u64())
            .unwrap_or(0)
    });
    lines
}

/// Backends beside the two the tests look at, so the first screen is checked with a realistic
/// number of backends (the quick suite has about six).
pub(crate) const OTHERS: [&str; 4] = ["etcd-lease", "redis-setnx", "redlock", "zk-curator"];

/// Writes a run directory under `parent` and returns its path.
pub(crate) fn synthetic_run(parent: &Path, name: &str, started: &str, overlap: bool) -> PathBuf {
    let dir = parent.join(name);
    let run = RunDir::create(parent, "synthetic", Some(&dir)).unwrap();
    let (bad, good) = ("redis-broken-nonx", "zk-fair");
    run.write_scenario("name = \"synthetic\"\nseed = 7\nduration = \"1s\"\nwarmup = \"200ms\"\n")
        .unwrap();
    let results = json!({
        "schema_version": 1, "scenario": "synthetic", "seed": 7, "started_at": started,
        "complete": true, "cluster": "managed",
        "connections": {"redis": {"tls": true, "mutual_tls": false, "auth": true}},
        "environment": {"lockbench_version": "0.1.0", "kernel": "6.1.0-test", "os": "Debian GNU/Linux 12 (bookworm)",
                        "cpus": 2, "cpu_model": "Test CPU @ 2.20GHz", "load_average": [3.5, 2.25, 1.0],
                        "load_average_end": [7.25, 3.0, 1.5],
                        "servers": {"redis": "7.0.15", "zookeeper": "3.8.0"}},
        "results": [
            result(good, "valid", 0),
            result(bad, if overlap { "invalid" } else { "valid" }, overlap as u64),
            result(OTHERS[0], "valid", 0), result(OTHERS[1], "valid", 0),
            result(OTHERS[2], "valid", 0), result(OTHERS[3], "valid", 0)
        ],
        "scorecard": {"cells": [
            {"backend": good, "fault": "pause", "runs": 1, "not_applied": 0, "violations": {}, "stayed_available": true},
            {"backend": bad, "fault": "pause", "runs": 1, "not_applied": 0, "violations": {"mutex": 1}, "stayed_available": true}
        ]},
        "failover": [{"backend": bad, "promoted_after_ms": 1234.5}],
        "expectations": [
            {"backend": good, "expect": "safe", "outcome": "met", "measured": "valid"},
            {"backend": bad, "expect": "safe", "implicit": true, "outcome": "failed",
             "measured": "invalid: 1 overlap"}
        ]
    });
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(&results).unwrap(),
    )
    .unwrap();
    let mut lines = history(good, false);
    lines.extend(history(bad, overlap));
    for b in OTHERS {
        lines.extend(history(b, false));
    }
    let text = lines.join("\n") + "\n";
    lockbench_core::history::file::append_frame(
        &dir.join(lockbench_core::history::file::FILE_NAME),
        text.as_bytes(),
    )
    .unwrap();
    for (i, backend) in [good, bad].into_iter().chain(OTHERS).enumerate() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..2000u64 {
            h.record(100 * (i as u64 + 1) + v * v / 50).unwrap();
        }
        run.write_histogram(backend, "acquire", &h).unwrap();
        run.write_histogram(backend, "handoff", &h).unwrap();
    }
    dir
}

fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = html[start..].find("</section>").unwrap() + start;
    &html[start..end]
}

/// How plotters writes the overlap colour (chart::BAD) as a filled shape.
const RED_FILL: &str = "fill=\"#D62728\"";

#[test]
fn the_report_has_every_section_with_charts_and_no_external_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = synthetic_run(tmp.path(), "run", "2026-01-01T00:00:00Z", true);
    let path = write_report(&dir).unwrap();
    assert_eq!(path, dir.join("report.html"));
    let html = std::fs::read_to_string(&path).unwrap();
    // What produced it: the build, the cluster and how it was reached, the machine's CPU
    // model, its load when the run started and ended, and whether lockbench was the limit.
    assert!(html.contains("Test CPU @ 2.20GHz"), "no CPU model");
    assert!(
        html.contains("3.50 2.25 1.00 (1, 5, 15 min)"),
        "no load average"
    );
    assert!(
        html.contains("7.25 3.00 1.50 (1, 5, 15 min)"),
        "no load average at the end"
    );
    assert!(html.contains("<b>lockbench</b> 0.1.0"), "no version");
    assert!(
        html.contains("managed (TLS, authenticated to redis)"),
        "no connection summary"
    );
    assert!(
        html.contains("the load generator the limit</th><td>not sampled"),
        "no word on the load generator"
    );
    for id in [
        "summary",
        "scorecard",
        "recipes",
        "more",
        "spectrum",
        "timeline",
        "holders",
        "fencing",
        "fairness",
        "environment",
    ] {
        section(&html, id);
    }
    assert!(html.matches("<svg").count() >= 10, "too few charts");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page references a URL"
    );
    assert!(!html.contains("<script"), "the page needs no JavaScript");
    for f in [
        "results.json",
        "scenario.toml",
        "history.jsonl.zst",
        "histograms/zk-fair.acquire.hdr",
    ] {
        assert!(html.contains(&format!("href=\"{f}\"")), "no link to {f}");
    }
    // The expectations, as `run` judged them (they set its exit code).
    let expectations = section(&html, "expectations");
    assert!(
        expectations.contains("1 met, 1 failed, 0 unknown")
            && expectations.contains("FAILED")
            && expectations.contains("invalid: 1 overlap"),
        "{expectations}"
    );
    // Generic rendering of fields without a dedicated view, and the fault window.
    assert!(section(&html, "scorecard").contains("UNSAFE: 1 mutex"));
    assert!(
        section(&html, "more").contains("Failover") && section(&html, "more").contains("1234.5")
    );
    assert!(section(&html, "more").contains("wakeups_per_release"));
    // The herd figures have their own section (chart + table), not the generic one.
    let fanout = section(&html, "fanout");
    assert!(
        fanout.contains("<svg") && fanout.contains("19.00 | 19.50"),
        "{fanout}"
    );
    assert!(fanout.contains("19.25") && fanout.contains("test counters"));
    assert!(section(&html, "timeline").contains("SIGSTOP"));
    // The comparison charts come first, shade the fault window and share an HTML legend.
    let glance = section(&html, "glance");
    assert!(html.find("id=\"glance\"") < html.find("id=\"summary\""));
    assert!(glance.matches("<svg").count() >= 2, "{glance:.300}");
    assert!(
        glance.contains("pause"),
        "the fault window is not on the comparison chart"
    );
    assert!(glance.contains("class=\"legend\"") && glance.contains("zk-curator"));
    // p90 in the summary; per-backend detail folded.
    assert!(section(&html, "summary").contains("<th>p90</th>"));
    assert!(section(&html, "timeline").contains("<details>"));
    assert!(html.contains("seed = 7"), "the scenario TOML is embedded");
    assert!(html.contains("7.0.15") && html.contains("6.1.0-test"));
    // The invalid backend is flagged in the summary.
    assert!(section(&html, "summary").contains("VIOLATED"));
    // The headline judges the run against its expectations first; the overlap nobody
    // expected is named apart.
    assert!(
        html.contains(
            "<span class=\"verdict failed\">EXPECTATIONS FAILED</span> (1 of 2 failed, 0 unknown)"
        ),
        "{:.2000}",
        &html[html.find("<h1>").unwrap()..]
    );
    assert!(
        html.contains("Safety violated by 1 of 6 backends; NOT expected: redis-broken-nonx (1 overlap, 1 stale write accepted)")
    );
    assert!(html.contains("<b>UNEXPECTED</b> redis-broken-nonx: 1 overlap"));
    assert!(section(&html, "summary").contains("class=\"safety bad\">VIOLATED: 1 overlap"));
}

/// A violation the scenario expected (a chaos run's holder pause) reads as
/// met, amber, not as a red regression.
#[test]
fn an_expected_violation_heads_the_report_as_met() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = synthetic_run(tmp.path(), "run", "2026-01-01T00:00:00Z", true);
    let file = dir.join("results.json");
    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    results["expectations"][1] = json!({"backend": "redis-broken-nonx", "expect": "violated",
        "outcome": "met", "measured": "invalid: 1 overlap"});
    std::fs::write(&file, results.to_string()).unwrap();
    let html = std::fs::read_to_string(write_report(&dir).unwrap()).unwrap();
    assert!(
        html.contains("<span class=\"verdict met\">EXPECTATIONS MET</span> (2 of 2)"),
        "{:.1500}",
        &html[html.find("<h1>").unwrap()..]
    );
    assert!(html.contains(
        "Safety violated by 1 of 6 backends; all as expected: redis-broken-nonx (1 overlap, 1 stale write accepted); none unexpected"
    ));
    assert!(!html.contains("UNEXPECTED"));
    assert!(
        section(&html, "summary")
            .contains("class=\"safety expected\">VIOLATED, as expected: 1 overlap")
    );
}

#[test]
fn overlapping_holds_are_drawn_red_and_clean_histories_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = write_report(&synthetic_run(
        tmp.path(),
        "bad",
        "2026-01-01T00:00:00Z",
        true,
    ))
    .unwrap();
    let holders = std::fs::read_to_string(bad).unwrap();
    let holders = section(&holders, "holders");
    let broken = &holders[holders.find("redis-broken-nonx</span>").unwrap()..];
    assert!(broken.contains("1 overlapping hold(s)"), "{broken:.400}");
    assert!(
        broken.matches(RED_FILL).count() >= 2,
        "both overlapping bars are red"
    );
    assert!(
        broken.contains("around the first overlap")
            || broken.contains("start of the measured window")
    );

    let good = write_report(&synthetic_run(
        tmp.path(),
        "good",
        "2026-01-02T00:00:00Z",
        false,
    ))
    .unwrap();
    let html = std::fs::read_to_string(good).unwrap();
    assert!(
        !section(&html, "holders").contains(RED_FILL),
        "no overlap, no red"
    );
}

#[test]
fn the_stale_writes_are_marked_on_the_staircase() {
    let tmp = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(
        write_report(&synthetic_run(
            tmp.path(),
            "r",
            "2026-01-01T00:00:00Z",
            true,
        ))
        .unwrap(),
    )
    .unwrap();
    let fencing = section(&html, "fencing");
    let broken = &fencing[fencing.find("redis-broken-nonx</span>").unwrap()..];
    assert!(
        broken.contains("stale writes accepted: <b"),
        "{broken:.300}"
    );
    assert!(broken.contains("rejected: 1"));
}

#[test]
fn the_index_lists_runs_newest_first_with_their_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let old = synthetic_run(
        tmp.path(),
        "2026-01-01T000000-synthetic",
        "2026-01-01T00:00:00Z",
        false,
    );
    synthetic_run(
        tmp.path(),
        "2026-02-01T000000-synthetic",
        "2026-02-01T00:00:00Z",
        true,
    );
    std::fs::create_dir(tmp.path().join("not-a-run")).unwrap();
    write_report(&old).unwrap();
    let html = std::fs::read_to_string(write_index(tmp.path()).unwrap()).unwrap();
    let new_at = html
        .find("2026-02-01T000000-synthetic/results.json")
        .expect("new run, no report yet");
    let old_at = html
        .find("2026-01-01T000000-synthetic/report.html")
        .expect("old run's report");
    assert!(new_at < old_at, "newest first");
    assert!(html.contains("verdict invalid") && html.contains("verdict valid"));
    assert!(html.contains("<span class=\"verdict failed\">failed</span>"));
    assert!(!html.contains("not-a-run"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn a_run_dir_with_only_results_json_still_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = synthetic_run(tmp.path(), "r", "2026-01-01T00:00:00Z", false);
    for f in ["history.jsonl.zst", "scenario.toml"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    std::fs::remove_dir_all(dir.join("histograms")).unwrap();
    let html = std::fs::read_to_string(write_report(&dir).unwrap()).unwrap();
    assert!(html.contains("No holds in"));
    assert!(html.contains("No samples for this chart"));
    assert!(
        section(&html, "fairness").contains("<svg"),
        "fairness comes from results.json"
    );
}

/// `--format markdown`: the headline first, then the terminal's table with the same figures
/// (one row per backend, `|` escaped inside cells), then what produced the run.
#[test]
fn the_markdown_summary_heads_with_the_verdict_and_has_every_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = synthetic_run(tmp.path(), "run", "2026-01-01T00:00:00Z", true);
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let results: lockbench_results::RunResults = serde_json::from_str(&text).unwrap();
    let md = lockbench_report::summary_md::render(&results);
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with("### lockbench `synthetic`: "), "{md}");
    let table: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('|'))
        .collect();
    assert!(table[0].contains("| backend | N/K | acq/s |"), "{md}");
    assert!(table[1].starts_with("| --- | --- | ---: |"), "{md}");
    assert_eq!(table.len(), 2 + results.results.len(), "{md}");
    let terminal = lockbench_report::table::render(&results);
    for r in &results.results {
        let line = table
            .iter()
            .find(|l| l.starts_with(&format!("| {} |", r.backend)))
            .unwrap_or_else(|| panic!("no row for {}: {md}", r.backend));
        // Every row has every column; a `|` inside a cell is escaped.
        assert_eq!(line.matches(" | ").count(), 13, "{line}");
        let acq = format!("{:.0}", r.throughput_per_s);
        assert!(
            line.contains(&format!(" | {acq} | ")) && terminal.contains(&acq),
            "{line}"
        );
    }
    assert!(md.contains("VIOLATED"), "{md}");
    assert!(md.contains("lockbench 0.1.0, seed 7"), "{md}");
}
