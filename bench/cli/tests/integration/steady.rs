//! Warm-up rounds before each backend's measured run (`[steady]`), on the shared cluster's
//! Redis: they run until successive windows agree, are recorded with the result, and a
//! backend that never settles is measured anyway and named.

use crate::common::{self, result_of, results, run_quietly, text};
use std::time::{Duration, Instant};

/// Runs quick's redis-setnx with two clients in 300 ms rounds, warmed up within `bounds`
/// (`steady.*` sets), as test `name`; returns the output and the backend's result.
fn warm_up(name: &str, bounds: [&str; 4]) -> (std::process::Output, serde_json::Value) {
    let mut sets = vec![
        "backends=redis-setnx",
        "duration=1s",
        "warmup=0s",
        "workload.clients=2",
        "steady.round=300ms",
    ];
    sets.extend(bounds);
    let (out, run) = run_quietly("steady", name, "quick", &sets);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !run.join("steady").exists(),
        "the rounds' scratch directory is removed"
    );
    let r = results(&run);
    let setnx = result_of(&r, "redis-setnx").clone();
    (out, setnx)
}

#[test]
fn a_backend_warms_up_until_its_rounds_agree_and_the_rounds_are_kept() {
    // Loose bounds (a window's mean within 99 % of the one before), met after a few rounds
    // even on a loaded machine, where 300 ms rounds of two clients vary twofold.
    let (out, setnx) = warm_up(
        "settles",
        [
            "steady.max=20s",
            "steady.window=2",
            "steady.tolerance=0.99",
            "steady.p50_tolerance=0.99",
        ],
    );
    let steady = &setnx["steady"];
    assert_eq!(steady["settled"], true, "{steady}");
    let rounds = steady["rounds"].as_array().expect("rounds");
    assert!(
        rounds.len() >= 4,
        "two windows of two rounds at least: {steady}"
    );
    assert!(
        rounds
            .iter()
            .all(|x| x["throughput_per_s"].as_f64().unwrap() > 0.0
                && x["acquire_p50_us"].as_u64().unwrap() > 0),
        "{steady}"
    );
    assert!(steady["seconds"].as_f64().unwrap() >= 1.2, "{steady}");
    assert!(setnx["acquisitions"].as_u64().unwrap() > 0, "{setnx}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("redis-setnx: steady after"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_backend_that_never_settles_is_measured_anyway_and_named() {
    // Bounds no two windows of real rounds meet (both means within 0.01 %).
    let (out, setnx) = warm_up(
        "unsettled",
        [
            "steady.max=2s",
            "steady.window=2",
            "steady.tolerance=0.0001",
            "steady.p50_tolerance=0.0001",
        ],
    );
    assert_eq!(setnx["steady"]["settled"], false, "{setnx}");
    // Rounds run until another would end past the bound: as many as the machine's load lets
    // fit in 2 s, at least one.
    let steady = &setnx["steady"];
    assert!(!steady["rounds"].as_array().unwrap().is_empty(), "{steady}");
    assert!(steady["seconds"].as_f64().unwrap() > 1.7, "{steady}");
    assert!(setnx["acquisitions"].as_u64().unwrap() > 0, "{setnx}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("redis-setnx: NOT steady after") && stderr.contains("steady.max"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_unreachable_server_fails_once_in_the_warm_up_not_twice() {
    let dir = common::scratch("steady", "unreachable");
    let file = dir.join("cluster.toml");
    std::fs::write(&file, "redis = [\"127.0.0.1:3\"]\n").unwrap();
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "quick", "--quiet", "--cluster"])
        .arg(format!("external:{}", file.display()))
        .arg("--out")
        .arg(dir.join("run"))
        .args(["--set", "backends=redis-setnx", "--set", "steady.max=30s"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let r = results(&dir.join("run"));
    let setnx = result_of(&r, "redis-setnx");
    assert_eq!(setnx["status"], "error", "{setnx}");
    assert!(
        setnx["error"].as_str().unwrap().contains("127.0.0.1:3"),
        "{setnx}"
    );
    assert_eq!(
        setnx["steady"]["rounds"].as_array().unwrap().len(),
        0,
        "{setnx}"
    );
    // The failed round stands for the backend's result: its error is the result's.
    let error = setnx["error"].as_str().unwrap();
    assert!(
        setnx["steady"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("warm-up round 1 failed: ") && e.ends_with(error)),
        "{setnx}"
    );
    assert!(
        took < Duration::from_secs(15),
        "took {took:?}: {}",
        text(&out)
    );
}
