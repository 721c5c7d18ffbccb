//! `compare` on synthetic results: the verdicts CI gates on.

use lockbench_compare::{Config, Metric, Verdict, compare, render};
use lockbench_results::RunResults;
use lockbench_results::model::Repetition;
use serde_json::json;

fn percentiles(p50: u64, p99: u64) -> serde_json::Value {
    json!({"count": 1000, "mean": p50 as f64, "p50": p50, "p90": (p50 + p99) / 2, "p99": p99, "p999": p99 * 2, "max": p99 * 3})
}

fn result(backend: &str, tput: f64, p50: u64, p99: u64, violations: u64) -> serde_json::Value {
    json!({
        "backend": backend, "workload": "contention", "status": "ok",
        "clients": 8, "keys": 1, "offered_rate_per_s": null, "measured_s": 5.0,
        "acquisitions": (tput * 5.0) as u64, "acquisitions_total": (tput * 6.0) as u64,
        "throughput_per_s": tput,
        "acquire_latency_us": percentiles(p50, p99),
        "acquire_service_time_us": percentiles(p50, p99),
        "handoff_latency_us": percentiles(p50 / 2, p99 / 2),
        "fairness_jain": 0.99, "per_client_acquisitions": [1, 2], "longest_wait_us": p99 * 3,
        "clients_replaced": 0, "errors": {"fail": 0, "info": 0, "by_kind": {}},
        "safety": {"verdict": if violations > 0 { "invalid" } else { "valid" },
            "mutex_violations": violations, "overlap_ms": 0.0, "max_overlap_ms": 0.0,
            "locks_lost": 0, "stale_writes_accepted": 0, "stale_writes_rejected": 0,
            "unfenced_writes": 0, "failed_checkers": []},
        "server_ops_per_acquisition": 3.0,
        "requests": {"client_counted": 10, "server_counted": 10, "server_source": "x",
            "server_per_acquisition": 3.0, "client_per_acquisition": 3.0},
        "recipe": null
    })
}

fn run(results: Vec<serde_json::Value>) -> RunResults {
    serde_json::from_value(json!({
        "schema_version": 1, "scenario": "quick", "seed": 1,
        "started_at": "2026-01-01T00:00:00Z", "complete": true, "cluster": "managed",
        "environment": {"lockbench_version": "0.1.0", "kernel": "6.1", "os": "Debian", "cpus": 2, "servers": {}},
        "results": results
    }))
    .expect("synthetic results.json parses")
}

fn baseline() -> RunResults {
    run(vec![
        result("zk-fair", 1000.0, 2000, 10_000, 0),
        result("etcd-lease", 500.0, 4000, 20_000, 0),
        result("redis-setnx", 5000.0, 400, 3000, 0),
    ])
}

fn verdict(c: &lockbench_compare::Comparison, backend: &str, m: Metric) -> Verdict {
    c.rows
        .iter()
        .find(|r| r.backend == backend && r.metric == m)
        .unwrap_or_else(|| panic!("no row for {backend} {m:?}"))
        .verdict
}

#[test]
fn identical_runs_are_all_non_significant() {
    let c = compare(&baseline(), &baseline(), &Config::default());
    assert!(!c.rows.is_empty());
    assert!(
        c.rows.iter().all(|r| r.verdict == Verdict::NonSignificant),
        "{}",
        render::table(&c)
    );
    assert_eq!(c.regressions(), 0);
    assert!(c.missing.is_empty());
    let markdown = render::markdown(&c);
    let separator = markdown.lines().find(|l| l.starts_with("|---")).unwrap();
    assert_eq!(separator, "|---".repeat(10) + "|", "one cell per column");
}

#[test]
fn doubled_p99_is_a_regression() {
    let mut new = baseline();
    new.results[0] = serde_json::from_value(result("zk-fair", 1000.0, 2000, 20_000, 0)).unwrap();
    let c = compare(&baseline(), &new, &Config::default());
    assert_eq!(
        verdict(&c, "zk-fair", Metric::AcquireP99),
        Verdict::Regressed
    );
    assert_eq!(
        verdict(&c, "zk-fair", Metric::AcquireP50),
        Verdict::NonSignificant
    );
    assert_eq!(
        verdict(&c, "etcd-lease", Metric::AcquireP99),
        Verdict::NonSignificant
    );
    assert!(c.regressions() >= 1);
    assert!(render::markdown(&c).contains("**REGRESSED**"));
    assert!(render::html(&c).contains("class=\"regressed\""));
}

#[test]
fn halved_p99_is_an_improvement() {
    let mut new = baseline();
    new.results[1] = serde_json::from_value(result("etcd-lease", 500.0, 4000, 10_000, 0)).unwrap();
    let c = compare(&baseline(), &new, &Config::default());
    assert_eq!(
        verdict(&c, "etcd-lease", Metric::AcquireP99),
        Verdict::Improved
    );
    assert_eq!(c.regressions(), 0);
}

#[test]
fn a_new_violation_is_always_a_regression() {
    let mut new = baseline();
    new.results[2] = serde_json::from_value(result("redis-setnx", 5000.0, 400, 3000, 1)).unwrap();
    // Even with thresholds so loose nothing numeric could ever regress.
    let mut config = Config::default();
    for m in Metric::NUMERIC {
        config.set_threshold(m.name(), 100.0).unwrap();
    }
    let c = compare(&baseline(), &new, &config);
    assert_eq!(
        verdict(&c, "redis-setnx", Metric::Safety),
        Verdict::Regressed
    );
    assert_eq!(c.regressions(), 1);
    // ... and violations on both sides are not news.
    let c = compare(&new, &new, &config);
    assert_eq!(c.regressions(), 0);
}

/// A shared lock's reader/writer conflicts are damage like an overlap: a
/// run that shows them where the baseline had none is a regression, the kind named.
#[test]
fn a_new_reader_writer_conflict_is_a_regression() {
    let mut rw = result("zk-rwlock", 1000.0, 2000, 10_000, 0);
    let base = run(vec![rw.clone()]);
    rw["safety"]["verdict"] = "invalid".into();
    rw["safety"]["rw_conflicts"] = 3.into();
    let new = run(vec![rw]);
    assert_eq!(
        new.results[0].safety.violated_kinds(),
        ["3 reader/writer conflicts"]
    );
    let c = compare(&base, &new, &Config::default());
    assert_eq!(verdict(&c, "zk-rwlock", Metric::Safety), Verdict::Regressed);
    assert_eq!(c.regressions(), 1);
    assert_eq!(compare(&new, &new, &Config::default()).regressions(), 0);
}

#[test]
fn noise_within_thresholds_is_non_significant() {
    let new = run(vec![
        result("zk-fair", 900.0, 2300, 12_500, 0), // -10 %, +15 %, +25 %
        result("etcd-lease", 560.0, 3500, 16_000, 0), // +12 %, -12.5 %, -20 %
        result("redis-setnx", 4400.0, 440, 3700, 0), // -12 %, +10 %, +23 % (p90 +22 %)
    ]);
    let c = compare(&baseline(), &new, &Config::default());
    assert!(
        c.rows.iter().all(|r| r.verdict == Verdict::NonSignificant),
        "{}",
        render::table(&c)
    );
}

#[test]
fn tiny_latency_changes_are_below_the_floor() {
    let base = run(vec![result("redis-setnx", 5000.0, 40, 100, 0)]);
    let new = run(vec![result("redis-setnx", 5000.0, 60, 140, 0)]); // +50 %, +40 %, but 20-40 µs
    let c = compare(&base, &new, &Config::default());
    assert_eq!(c.regressions(), 0, "{}", render::table(&c));
}

#[test]
fn a_missing_backend_is_reported_not_crashed_on() {
    let mut new = baseline();
    new.results.remove(1);
    new.results
        .push(serde_json::from_value(result("redlock", 300.0, 5000, 30_000, 0)).unwrap());
    let c = compare(&baseline(), &new, &Config::default());
    let only: Vec<(&str, &str)> = c
        .missing
        .iter()
        .map(|m| (m.backend.as_str(), m.only_in))
        .collect();
    assert_eq!(only, [("etcd-lease", "base"), ("redlock", "new")]);
    assert_eq!(c.regressions(), 0);
    assert!(
        render::table(&c).contains("MISSING: etcd-lease / contention: only in the baseline run")
    );
    assert!(render::markdown(&c).contains("missing"));
}

#[test]
fn a_backend_that_failed_now_is_a_regression() {
    let mut new = baseline();
    new.results[0].status = lockbench_results::Status::Error;
    new.results[0].error = Some("cannot reach 127.0.0.1:12181".into());
    let c = compare(&baseline(), &new, &Config::default());
    assert_eq!(verdict(&c, "zk-fair", Metric::Status), Verdict::Regressed);
}

fn with_reps(mut r: RunResults, tputs: &[f64]) -> RunResults {
    let base = r.results[0].clone();
    r.results[0].repetitions = tputs
        .iter()
        .map(|&t| {
            let mut x = base.clone();
            x.throughput_per_s = t;
            Repetition::of(&x)
        })
        .collect();
    r
}

/// zk-fair's throughput row.
fn throughput_row(c: &lockbench_compare::Comparison) -> &lockbench_compare::Row {
    c.rows
        .iter()
        .find(|r| r.backend == "zk-fair" && r.metric == Metric::Throughput)
        .expect("a throughput row for zk-fair")
}

#[test]
fn repetitions_are_tested_for_significance() {
    // A 20 % drop in mean throughput, beyond the 15 % threshold ...
    let base = with_reps(baseline(), &[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
    // ... that is consistent across repetitions: significant, a regression.
    let steady = with_reps(baseline(), &[800.0, 805.0, 795.0, 802.0, 798.0]);
    let c = compare(&base, &steady, &Config::default());
    let row = throughput_row(&c);
    assert_eq!(row.verdict, Verdict::Regressed);
    assert!(row.p_value.unwrap() < 0.001);
    assert_eq!((row.base_n, row.new_n), (5, 5));
    // ... that is all noise (one slow repetition): not significant.
    let noisy = with_reps(baseline(), &[1000.0, 400.0, 1000.0, 600.0, 1000.0]);
    let c = compare(&base, &noisy, &Config::default());
    let row = throughput_row(&c);
    assert_eq!(
        row.verdict,
        Verdict::NonSignificant,
        "p = {:?}",
        row.p_value
    );
    assert!(row.note.starts_with("q = "), "{}", row.note);
}

/// A change significant on its own (p < 0.05) is one of six tests here (zk-fair's six metrics
/// have repetitions); adjusted for the family it is not, so the comparison flags nothing. The
/// steady 20 % drop above stays flagged after the same adjustment.
#[test]
fn a_borderline_change_among_many_tests_is_not_flagged() {
    let base = with_reps(baseline(), &[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
    let borderline = with_reps(baseline(), &[750.0, 950.0, 700.0, 900.0, 800.0]);
    let c = compare(&base, &borderline, &Config::default());
    let row = throughput_row(&c);
    let (p, q) = (row.p_value.unwrap(), row.q_value.unwrap());
    assert!(p < 0.05 && q >= 0.05, "p = {p}, q = {q}");
    assert_eq!(c.tests, 6);
    assert_eq!(
        row.verdict,
        Verdict::NonSignificant,
        "{}",
        render::table(&c)
    );
    assert_eq!(c.regressions(), 0);
}

/// A result made with `workload.slowdown` is named in the summary every format prints.
#[test]
fn an_injected_slowdown_is_named() {
    let mut new = baseline();
    new.results[1].injected_slowdown_ms = Some(2.0);
    let c = compare(&baseline(), &new, &Config::default());
    assert_eq!(c.injected.len(), 1);
    let summary = render::summary(&c);
    assert!(
        summary.contains(
            "INJECTED SLOWDOWN (workload.slowdown, per acquire): etcd-lease/contention none -> 2 ms"
        ),
        "{summary}"
    );
    assert!(render::markdown(&c).contains("INJECTED SLOWDOWN"));
}

/// The A/A chain: each run compared with the one before, as the gate compares nights; the
/// gate's failures (regressions) and every flag either way are counted, the noisy metric named.
#[test]
fn an_a_a_chain_counts_the_gates_false_alarms() {
    let at = |tput: f64| {
        run(vec![
            result("zk-fair", tput, 2000, 10_000, 0),
            result("redis-setnx", 5000.0, 400, 3000, 0),
        ])
    };
    // zk-fair's throughput drifts: 1000 -> 1050 (noise) -> 700 (a flag: regressed) -> 1000
    // (improved).
    let runs: Vec<(String, RunResults)> = [1000.0, 1050.0, 700.0, 1000.0]
        .iter()
        .enumerate()
        .map(|(i, &t)| (format!("run{i}"), at(t)))
        .collect();
    let noise = lockbench_compare::noise::chain(&runs, &Config::default()).unwrap();
    assert_eq!(noise.pairs.len(), 3);
    assert_eq!(noise.failed(), 1);
    assert_eq!(noise.flagged(), 2);
    assert_eq!(noise.by_metric.get("throughput"), Some(&2));
    assert_eq!(noise.pairs[1].flagged, ["zk-fair throughput -33%"]);
    let text = lockbench_compare::noise::markdown(&noise);
    assert!(
        text.contains("the gate failed 1 of 3 comparisons of one build with itself (33%)")
            && text.contains("too few to estimate a rate"),
        "{text}"
    );
    let mut other = at(1000.0);
    other.scenario = "fencing".into();
    let e = lockbench_compare::noise::chain(
        &[runs[0].clone(), ("x".into(), other)],
        &Config::default(),
    )
    .unwrap_err();
    assert!(e.contains("one scenario"), "{e}");
    assert!(lockbench_compare::noise::chain(&runs[..1], &Config::default()).is_err());
}

/// The gate's power from the same runs: a metric that moves more from run to run needs a
/// larger change to be caught 19 times in 20, more rounds a side need a smaller one, and no
/// spread at all leaves the threshold.
#[test]
fn the_smallest_change_caught_grows_with_the_noise_and_shrinks_with_rounds() {
    let at = |zk: f64| {
        run(vec![
            result("zk-fair", zk, 2000, 10_000, 0),
            result("redis-setnx", 5000.0, 400, 3000, 0),
        ])
    };
    let runs: Vec<(String, RunResults)> = [1000.0, 1100.0, 900.0, 1000.0]
        .iter()
        .enumerate()
        .map(|(i, &t)| (format!("run{i}"), at(t)))
        .collect();
    let config = Config::default();
    let find = |rows: &[lockbench_compare::noise::Detectable], b: &str, m: Metric| {
        rows.iter()
            .find(|d| d.backend == b && d.metric == m)
            .unwrap_or_else(|| panic!("no {b} {m:?}"))
            .clone()
    };
    let three = lockbench_compare::noise::detectable(&runs, &config, 3);
    let zk = find(&three, "zk-fair", Metric::Throughput);
    assert!((zk.cv - 0.0816).abs() < 0.001, "{zk:?}");
    let quiet = find(&three, "redis-setnx", Metric::Throughput);
    assert_eq!(quiet.cv, 0.0);
    assert!(
        (quiet.change - config.threshold(Metric::Throughput)).abs() < 1e-9,
        "{quiet:?}"
    );
    assert!(zk.change > quiet.change + 0.1, "{zk:?}");
    let ten = lockbench_compare::noise::detectable(&runs, &config, 10);
    assert!(find(&ten, "zk-fair", Metric::Throughput).change < zk.change);
    let text = lockbench_compare::noise::detectable_markdown(&three, 3);
    assert!(
        text.contains("| zk-fair | throughput | 1000.0 | 8.2% |"),
        "{text}"
    );
}

/// Calibrated thresholds: a backend's own band from its own spread, wider for the noisier
/// one, at least 2 % for one that never moved; written as a file `compare --config` reads
/// back, after which the noisy backend's run-to-run swings no longer fail the gate while the
/// same swing on the quiet one still does.
#[test]
fn calibrated_thresholds_fit_each_backends_own_spread() {
    let at = |zk: f64, redis: f64| {
        run(vec![
            result("zk-fair", zk, 2000, 10_000, 0),
            result("redis-setnx", redis, 400, 3000, 0),
        ])
    };
    let runs: Vec<(String, RunResults)> = [
        (1000.0, 5000.0),
        (1200.0, 5000.0),
        (800.0, 5000.0),
        (1000.0, 5000.0),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(zk, redis))| (format!("run{i}"), at(zk, redis)))
    .collect();
    let config = Config::default();
    let calibrated = lockbench_compare::noise::calibrate(&runs, &config, 1);
    let zk = calibrated.threshold_for("zk-fair", Metric::Throughput);
    let redis = calibrated.threshold_for("redis-setnx", Metric::Throughput);
    // CV 16.3 % over 4 runs; 12 tests a comparison (2 backends x 6 metrics), so
    // z(1 - 0.05/24) = 2.87 and 2.87 x 0.163 x sqrt(2) = 0.663.
    assert!((zk - 0.67).abs() < 0.011, "{zk}");
    assert_eq!(redis, 0.02, "no spread: the least threshold");
    assert_eq!(
        calibrated.threshold_for("etcd-lease", Metric::Throughput),
        config.threshold(Metric::Throughput),
        "a backend the runs did not measure keeps the global threshold"
    );
    let text = lockbench_compare::noise::calibration_toml(&calibrated, &runs, 1);
    assert!(text.starts_with("# Noise thresholds calibrated"), "{text}");
    let read = Config::from_toml(&text).expect("the file reads back");
    assert_eq!(read.backends, calibrated.backends);
    // A 30 % drop: noise for zk-fair now, a regression for redis-setnx.
    let c = lockbench_compare::compare(&at(1000.0, 5000.0), &at(700.0, 3500.0), &read);
    let verdict = |b: &str| {
        c.rows
            .iter()
            .find(|r| r.backend == b && r.metric == Metric::Throughput)
            .unwrap()
            .verdict
    };
    assert_eq!(verdict("zk-fair"), Verdict::NonSignificant);
    assert_eq!(verdict("redis-setnx"), Verdict::Regressed);
    let bad = Config::from_toml("[backends.zk-fair]\nthroughputt = 0.3\n").unwrap_err();
    assert!(
        bad.contains("[backends.zk-fair]") && bad.contains("throughputt"),
        "{bad}"
    );
}

/// The gate's own shape in an A/A test: every window of 2 x rounds runs split in turns
/// (even places against odd), each side merged into repetitions and compared with Welch's
/// test; one odd run among steady ones fails a single-run chain but not the sides in turns.
#[test]
fn in_turns_compares_merged_sides_as_the_gate_runs_them() {
    let at = |zk: f64| run(vec![result("zk-fair", zk, 2000, 10_000, 0)]);
    let tputs = [1000.0, 1010.0, 990.0, 1005.0, 700.0, 1000.0, 995.0];
    let runs: Vec<(String, RunResults)> = tputs
        .iter()
        .enumerate()
        .map(|(i, &t)| (format!("n{}", i + 1), at(t)))
        .collect();
    let config = Config::default();
    let single = lockbench_compare::noise::chain(&runs, &config).unwrap();
    assert!(single.failed() >= 1, "the odd run fails one run a side");
    let turns = lockbench_compare::noise::in_turns(&runs, 3, &config).unwrap();
    assert_eq!(turns.pairs.len(), 2, "7 runs hold two windows of 6");
    assert_eq!(turns.pairs[0].base, "n1 n3 n5");
    assert_eq!(turns.pairs[0].new, "n2 n4 n6");
    assert_eq!(turns.pairs[1].base, "n2 n4 n6");
    assert_eq!(turns.failed(), 0, "{:?}", turns.pairs);
    assert!(turns.tests > 0, "with repetitions the sides are tested");
    let e = lockbench_compare::noise::in_turns(&runs[..5], 3, &config).unwrap_err();
    assert!(e.contains("at least 6"), "{e}");
}
