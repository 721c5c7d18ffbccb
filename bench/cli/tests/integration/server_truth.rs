//! Server-side truth against the real servers: the fencing workload's real SIGSTOP of the
//! holder past its session / lease / TTL must show, for every backend family, a lock the
//! servers took from a client that still believed it held it (`lost_while_held`), and the
//! client learning it later (a detection latency); a run without faults shows none.
//!
//! Runs use the managed cluster's servers as an external cluster (see `common`), each test
//! under its own key prefixes: the observer names a holder by its client id, and another run
//! on the same lock names (tests run in parallel) would have clients with the same ids. Bounds
//! are generous: a loaded 2-core machine is slow, not wrong.

use crate::common::{result_of, results, run_quietly, text};
use serde_json::Value;

/// One backend of each family, plus the second recipe of ZooKeeper and etcd (whose holders
/// are named differently: by token, and by the server's Lock API).
const BACKENDS: [&str; 6] = [
    "zk-fair",
    "zk-curator",
    "etcd-lease",
    "etcd-lockapi",
    "redis-setnx",
    "redlock",
];

/// `--set`s that put every recipe's locks under prefixes of test `name` alone.
fn own_prefixes(name: &str) -> Vec<String> {
    let pid = std::process::id();
    vec![
        format!("zookeeper.root=/lockbench-{name}-{pid}"),
        format!("etcd.prefix=/lockbench-{name}-{pid}"),
        format!("redis.prefix=lockbench-{name}-{pid}:"),
        format!("redlock.prefix=lockbench-{name}-{pid}:"),
    ]
}

fn figures<'a>(r: &'a Value, backend: &str) -> &'a Value {
    let res = result_of(r, backend);
    let truth = &res["server_truth"];
    assert!(
        truth.is_object(),
        "{backend}: no server_truth (observe_server off?): {res}"
    );
    assert!(truth.get("note").is_none(), "{backend}: {truth}");
    let f = &truth["figures"];
    assert!(
        f["observations"].as_u64().unwrap_or(0) >= 2,
        "{backend}: the observer saw nothing: {truth}"
    );
    f
}

#[test]
fn a_holder_paused_past_its_expiry_is_lost_while_held_and_learns_it_later() {
    let backends = format!("backends={}", BACKENDS.join(","));
    let mut sets = vec![
        backends,
        "duration=6s".into(),
        "zookeeper.session_timeout=1s".into(),
        // etcd raises a lease's TTL to its minimum (1.5 x the election timeout, here 1.5 s,
        // rounded up): 2 s makes the pause (twice the TTL) outlast the lease for sure.
        "etcd.lease_ttl=2s".into(),
        "redis.ttl=500ms".into(),
        "redlock.ttl=500ms".into(),
    ];
    sets.extend(own_prefixes("paused"));
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (out, run) = run_quietly("truth", "paused", "fencing", &sets);
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&run);
    for backend in BACKENDS {
        let f = figures(&r, backend);
        assert!(
            f["lost_while_held"].as_u64().unwrap() >= 1,
            "{backend}: a paused holder's lock was never lost while held: {f}"
        );
        assert!(f["detected"].as_u64().unwrap() >= 1, "{backend}: {f}");
        let p50 = f["detection_p50_ms"].as_f64().unwrap();
        // The holder learns after it is resumed: the pause is twice the expiry, so detection
        // comes at least about one expiry (500 ms to 1 s) after the loss, and well within
        // the run.
        assert!(p50 > 100.0 && p50 < 6_000.0, "{backend}: p50 {p50} ms: {f}");
        let episode = f["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["detection_ms"].is_number())
            .unwrap();
        let by = episode["detected_by"].as_str().unwrap();
        assert!(
            by.ends_with("lock-lost") || by.ends_with("session-expired"),
            "{backend}: detected by {by}"
        );
        // Slot 0 (the paused holder) has client ids 0, 3, 6, ...
        assert_eq!(
            episode["client"].as_u64().unwrap() % 3,
            0,
            "{backend}: {episode}"
        );
        // Charged to the holder's pause windows (each pause is a window of its own).
        let in_pauses: u64 = f["windows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["fault"] == "pause-client")
            .map(|w| w["lost_while_held"].as_u64().unwrap())
            .sum();
        assert!(
            in_pauses >= 1,
            "{backend}: none in a pause-client window: {f}"
        );
    }
}

#[test]
fn a_run_without_faults_loses_nothing_while_held() {
    let backends = format!("backends={}", BACKENDS.join(","));
    let mut sets = vec![
        backends,
        "observe_server=true".into(),
        "duration=2s".into(),
        "warmup=500ms".into(),
    ];
    sets.extend(own_prefixes("clean"));
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (out, run) = run_quietly("truth", "clean", "quick", &sets);
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&run);
    for backend in BACKENDS {
        let f = figures(&r, backend);
        assert_eq!(f["lost_while_held"], 0, "{backend}: {f}");
        // Blind only until the first read of every server (well under a millisecond each).
        assert!(f["blind_ms"].as_f64().unwrap() < 200.0, "{backend}: {f}");
        // The observer named a holder for (about) every grant.
        let res = result_of(&r, backend);
        let grants = res["acquisitions_total"].as_u64().unwrap();
        let seen = f["observations"].as_u64().unwrap();
        assert!(
            seen >= grants / 4,
            "{backend}: {seen} observations, {grants} grants"
        );
    }
}
