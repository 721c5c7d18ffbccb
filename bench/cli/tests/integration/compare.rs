//! `lockbench compare` end to end on synthetic results: the exit codes CI gates on.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A contention result of `backend` with acquire p99 `p99` µs and `violations` overlaps.
pub(crate) fn result(backend: &str, p99: u64, violations: u64) -> Value {
    let pct = json!({"count": 100, "mean": 900.0, "p50": 800, "p90": 2000, "p99": p99, "p999": p99, "max": p99});
    json!({
        "backend": backend, "workload": "contention", "status": "ok", "clients": 8, "keys": 1,
        "offered_rate_per_s": null, "measured_s": 5.0, "acquisitions": 5000, "acquisitions_total": 6000,
        "throughput_per_s": 1000.0, "acquire_latency_us": pct, "acquire_service_time_us": pct,
        "handoff_latency_us": null, "fairness_jain": 1.0, "per_client_acquisitions": [],
        "longest_wait_us": p99, "clients_replaced": 0, "errors": {"fail": 0, "info": 0, "by_kind": {}},
        "safety": {"verdict": "valid", "mutex_violations": violations, "overlap_ms": 0.0,
            "max_overlap_ms": 0.0, "locks_lost": 0, "stale_writes_accepted": 0,
            "stale_writes_rejected": 0, "unfenced_writes": 0, "failed_checkers": []},
        "server_ops_per_acquisition": null,
        "requests": {"client_counted": null, "server_counted": null, "server_source": "",
            "server_per_acquisition": null, "client_per_acquisition": null},
        "recipe": null
    })
}

/// A run directory `dir/name` whose results.json holds `results`.
pub(crate) fn write(dir: &Path, name: &str, results: Vec<Value>) -> PathBuf {
    let run = json!({
        "schema_version": 1, "scenario": "nightly", "seed": 1, "started_at": "2026-01-01T00:00:00Z",
        "complete": true, "cluster": "managed",
        "environment": {"lockbench_version": "0.1.0", "kernel": "", "os": "", "cpus": 2, "servers": {}},
        "results": results
    });
    let run_dir = dir.join(name);
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("results.json"),
        serde_json::to_vec(&run).unwrap(),
    )
    .unwrap();
    run_dir
}

fn compare(base: &Path, new: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("compare")
        .arg(base)
        .arg(new)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn exit_codes_follow_the_verdicts() {
    let tmp = std::env::temp_dir().join(format!("lockbench-compare-{}", std::process::id()));
    let base = write(
        &tmp,
        "base",
        vec![result("zk-fair", 10_000, 0), result("redlock", 20_000, 0)],
    );
    let same = write(
        &tmp,
        "same",
        vec![result("zk-fair", 10_000, 0), result("redlock", 20_000, 0)],
    );
    let slow = write(
        &tmp,
        "slow",
        vec![result("zk-fair", 20_000, 0), result("redlock", 20_000, 0)],
    );
    let unsafe_ = write(
        &tmp,
        "unsafe",
        vec![result("zk-fair", 10_000, 2), result("redlock", 20_000, 0)],
    );
    let partial = write(&tmp, "partial", vec![result("zk-fair", 10_000, 0)]);

    let (code, out) = compare(&base, &same, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 regressed"), "{out}");

    // A results.json file works as well as its directory; Markdown for the CI comment.
    let html = tmp.join("compare.html");
    let (code, out) = compare(
        &base.join("results.json"),
        &slow,
        &["--format", "markdown", "--html", html.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("| zk-fair | contention | acquire_p99 |") && out.contains("**REGRESSED**"),
        "{out}"
    );
    assert!(
        std::fs::read_to_string(&html)
            .unwrap()
            .contains("class=\"regressed\"")
    );

    // Loosening the threshold past 2x makes it noise.
    let (code, _) = compare(&base, &slow, &["--threshold", "acquire_p99=1.5"]);
    assert_eq!(code, 0);

    let (code, out) = compare(&base, &unsafe_, &["--format", "json"]);
    assert_eq!(code, 1);
    assert!(out.contains("new safety violation"), "{out}");

    let (code, out) = compare(&base, &partial, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("MISSING: redlock / contention: only in the baseline run"),
        "{out}"
    );

    let (code, _) = compare(&base, &tmp.join("nowhere"), &[]);
    assert_eq!(code, 2, "unreadable input is not a regression");
    std::fs::remove_dir_all(&tmp).ok();
}

/// One synthetic result at `workers` dialled-in workers with `throughput` acquisitions per
/// second, the machine `machine` % busy, lockbench at 80 % of a core and redis at 15 %.
fn scaling_point(workers: usize, throughput: f64, machine: f64) -> Value {
    let mut r = result("redis-setnx", 5000, 0);
    r["throughput_per_s"] = json!(throughput);
    r["acquisitions"] = json!((throughput * 5.0) as u64);
    let clocks = lockbench_results::clocks::Clocks {
        workers: (1..=workers)
            .map(|k| lockbench_results::clocks::WorkerClock {
                name: format!("client{k}"),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    r["clocks"] = serde_json::to_value(clocks).unwrap();
    r["resources"] = json!({
        "interval_ms": 625, "cpus": 2, "machine_cpu_percent": [machine, machine],
        "processes": [
            {"name": "lockbench", "role": "generator", "cpu_percent_mean": 80.0},
            {"name": "redis", "role": "server", "cpu_percent_mean": 15.0}
        ]
    });
    r
}

/// `lockbench scaling`: runs at 1, 2 and 4 workers (given in any order) become one table in
/// worker order, and the finding names where the curve flattens and what ran out there (here
/// the machine, from the runs' own figures, with lockbench's CPU per acquisition computed
/// from them); a run that cannot be read is exit code 2, naming it.
#[test]
fn scaling_names_where_the_curve_flattens_and_what_ran_out() {
    let dir = crate::common::scratch("compare", "scaling");
    let runs = [
        write(&dir, "w4", vec![scaling_point(4, 2100.0, 100.0)]),
        write(&dir, "w1", vec![scaling_point(1, 1000.0, 60.0)]),
        write(&dir, "w2", vec![scaling_point(2, 2000.0, 97.0)]),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("scaling")
        .args(&runs)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    let rows: Vec<&str> = said.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(
        rows[1].starts_with("| 1 |") && rows[3].starts_with("| 4 |"),
        "{said}"
    );
    // 80 % of a core over 5 s for 5,000 acquisitions: 800 µs each.
    assert!(rows[1].contains("| 800 |"), "{said}");
    assert!(
        said.contains("flattens after 2 workers")
            && said.contains("at 2 workers the limit is the machine's 2 cores"),
        "{said}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["scaling"])
        .arg(dir.join("missing"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let complaint = String::from_utf8_lossy(&bad.stderr);
    assert!(
        complaint.contains("cannot read") && complaint.contains("/missing"),
        "{complaint}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real runs of etcd-lease at 1, 2, 4 and 8 clients (a key each): `lockbench scaling` reads
/// them along the clients, fits the scalability model, checks it on the 8-client run left
/// out, answers a what-if beyond the points as an extrapolation, and draws points and model
/// in one SVG.
#[test]
fn scaling_fits_a_model_to_real_runs_and_says_how_far_it_holds() {
    let mut runs = Vec::new();
    for n in [1, 2, 4, 8] {
        let clients = format!("workload.clients={n}");
        let keys = format!("workload.keys={n}");
        let sets = [
            "backends=etcd-lease",
            // Long enough that a loaded machine (the whole suite beside it) still grants
            // every point some acquisitions: a point with none has no figures to fit.
            "duration=3s",
            "warmup=1s",
            clients.as_str(),
            keys.as_str(),
        ];
        let (out, run) = crate::common::run_quietly("compare", &format!("usl{n}"), "quick", &sets);
        assert!(out.status.success(), "{}", crate::common::text(&out));
        runs.push(run);
    }
    let plot = runs[0].parent().unwrap().join("scaling.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("scaling")
        .args(&runs)
        .args(["--what-if", "clients=64", "--plot"])
        .arg(&plot)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("fitted to 4 points at 1-8 clients")
            && said.contains("held out 8 clients: predicted")
            && said.contains("what if 64 clients: ")
            && said.contains("extrapolated beyond the points"),
        "{said}"
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
    for run in &runs {
        let _ = std::fs::remove_dir_all(run.parent().unwrap());
    }
}

/// `lockbench noise`: runs of one build compared each with the one before; a doubled p99 in
/// the middle run is two false flags (one regression, one improvement) and names its metric;
/// one run is refused with exit code 2, as is a file that cannot be read.
#[test]
fn noise_counts_the_gates_flags_on_runs_of_one_build() {
    let dir = crate::common::scratch("compare", "noise");
    let runs = [
        write(&dir, "a", vec![result("zk-fair", 10_000, 0)]),
        write(&dir, "b", vec![result("zk-fair", 20_000, 0)]),
        write(&dir, "c", vec![result("zk-fair", 10_000, 0)]),
    ];
    let noise = |args: &[&Path]| {
        Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .arg("noise")
            .args(args)
            .output()
            .unwrap()
    };
    let out = noise(&[&runs[0], &runs[1], &runs[2]]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("the gate failed 1 of 2 comparisons of one build with itself (50%)")
            && said.contains("flagged something either way in 2 (100%)")
            && said.contains("Flags by metric: acquire_p99 2."),
        "{said}"
    );
    // Two a side in turns, as scripts/gate runs them: sides a c against b a, merged.
    let turns = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["noise", "--rounds", "2"])
        .args([&runs[0], &runs[1], &runs[2], &runs[0]])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&turns.stdout);
    assert!(turns.status.success(), "{said}");
    assert!(
        said.contains("2 runs a side in turns") && said.matches("the gate failed").count() == 2,
        "{said}"
    );
    let one = noise(&[&runs[0]]);
    assert_eq!(one.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&one.stderr).contains("at least two"));
    let missing = noise(&[&runs[0], &dir.join("missing")]);
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs of each side, merged: each run a repetition, so compare tests the sides' runs against
/// each other; a consistently doubled p99 over three runs a side is a regression, three runs
/// of one build are not; runs of another scenario do not merge.
#[test]
fn merged_runs_in_turns_are_compared_as_repetitions() {
    let tmp = std::env::temp_dir().join(format!("lockbench-merge-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let merge = |out: &str, runs: &[PathBuf]| {
        Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .arg("merge")
            .args(runs)
            .arg("--out")
            .arg(tmp.join(out))
            .output()
            .unwrap()
    };
    let side = |name: &str, p99s: [u64; 3]| -> Vec<PathBuf> {
        p99s.iter()
            .enumerate()
            .map(|(i, &p99)| {
                write(
                    &tmp,
                    &format!("{name}-{i}"),
                    vec![result("zk-fair", p99, 0)],
                )
            })
            .collect()
    };
    assert!(
        merge("base", &side("base", [10_000, 10_400, 9_800]))
            .status
            .success()
    );
    assert!(
        merge("same", &side("same", [10_200, 9_900, 10_100]))
            .status
            .success()
    );
    assert!(
        merge("slow", &side("slow", [20_000, 20_600, 19_700]))
            .status
            .success()
    );
    let merged: Value =
        serde_json::from_slice(&std::fs::read(tmp.join("base").join("results.json")).unwrap())
            .unwrap();
    assert_eq!(
        merged["results"][0]["repetitions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let (code, text) = compare(&tmp.join("base"), &tmp.join("same"), &[]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = compare(&tmp.join("base"), &tmp.join("slow"), &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("REGRESSED"), "{text}");
    let other = tmp.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut run: Value =
        serde_json::from_slice(&std::fs::read(tmp.join("base-0").join("results.json")).unwrap())
            .unwrap();
    run["scenario"] = "quick".into();
    std::fs::write(other.join("results.json"), run.to_string()).unwrap();
    let out = merge("mixed", &[tmp.join("base-0"), other]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("only runs of one scenario merge"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
