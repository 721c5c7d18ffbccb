//! The `watchdog` scenario: long holds kept alive by renewals, the holder
//! (a worker process) stopped for less than its lock's life and then for more, against real
//! Redis and a real SIGSTOP. Under the short pause the renewal that fell due runs in time and
//! redis-setnx keeps its lock; under the long one the lock goes to a waiter, and the resumed
//! holder's overdue renewal must fail: redis-setnx's compare-and-`PEXPIRE` refuses it, while
//! redis-broken-renew's plain `PEXPIRE` extends the successor's lock and reports success,
//! which the release/renew checker must catch.
//!
//! Shrunk for CI time (about 7 s per backend instead of 12 s): a 1 s lock life renewed every
//! 300 ms, held 5 s; the holder stopped for 400 ms (0.4 of the life), then for 2.5 s, which
//! ends 2 s before the run does: on a loaded machine the resume comes late, and the resumed
//! holder's renewal must still fall inside the run.

use crate::common::{self, result_of, results, text};
use serde_json::Value;

/// The scenario's shape at half its lock life and time scale, on lock keys of its own: its
/// 5 s holds would keep other tests' clients of the shared Redis waiting on theirs.
const SHRUNK: [&str; 9] = [
    "redis.prefix=lockbench-watchdog-test:",
    "redis.ttl=1s",
    "workload.renew_every=300ms",
    "workload.hold=5s",
    "duration=6s",
    "recovery=1s",
    "faults=[{ fault = \"pause\", targets = \"holder\", at = \"500ms\", duration = \"400ms\" }, \
     { fault = \"pause\", targets = \"holder\", at = \"1500ms\", duration = \"2500ms\" }]",
    "observe_server=false",
    "stall_alarm=10s",
];

/// The applied fault windows of `backend`'s result: (length in s, violations by kind).
fn windows(result: &Value) -> Vec<(f64, Value)> {
    let windows = result["fault_windows"].as_array().expect("fault windows");
    windows
        .iter()
        .filter(|w| w["applied"] == true)
        .map(|w| {
            let length = w["end_s"].as_f64().unwrap() - w["start_s"].as_f64().unwrap();
            (length, w["violations"].clone())
        })
        .collect()
}

#[test]
fn a_renewal_that_extends_another_clients_lock_is_caught() {
    let mut sets = vec!["backends=redis-broken-renew,redis-setnx"];
    sets.extend(SHRUNK);
    let (out, run) = common::run_quietly("watchdog", "broken", "watchdog", &sets);
    let r = results(&run);
    let broken_result = result_of(&r, "redis-broken-renew");
    let broken = &broken_result["safety"];
    assert_eq!(broken["verdict"], "invalid", "{broken}");
    assert!(
        broken["foreign_renews"].as_u64() >= Some(1),
        "{broken}\nthe pauses: {}",
        broken_result["fault_windows"]
    );
    assert_eq!(
        broken["checks"]["release"]["validity"], "invalid",
        "{broken}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("of another client's lock"),
        "{}",
        text(&out)
    );
    // The scenario expects the long pause's overlap and nothing else, and no violation in
    // the short pause: the foreign renewal fails the run; redis-setnx meets both.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stdout.contains("UNEXPECTED: redis-broken-renew: ")
            && stdout.contains("EXPECTATION FAILED: redis-broken-renew violated: invalid:"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("EXPECTATION MET: redis-setnx violated: invalid: ")
            && stdout
                .contains("EXPECTATION MET: redis-setnx safe_in: no violation in pause-client#1"),
        "{}",
        text(&out)
    );

    let good = result_of(&r, "redis-setnx");
    let safety = &good["safety"];
    assert_eq!(safety["foreign_renews"], 0, "{safety}");
    assert_eq!(safety["checks"]["release"]["validity"], "valid", "{safety}");
    let figures = &safety["checks"]["release"]["figures"];
    assert!(
        figures["renews_ok"].as_u64() >= Some(5),
        "the checker judged redis-setnx's renewals: {safety}"
    );
    assert!(
        figures["renews_failed"].as_u64() >= Some(1),
        "the resumed holder's overdue renewal found its lock gone: {safety}"
    );
    // Both pauses were applied; the short one cost nothing, the long one broke mutual
    // exclusion (the holder believed it held the lock while a waiter had it) and nothing else.
    let w = windows(good);
    assert_eq!(w.len(), 2, "{good}");
    assert!(w[0].0 < 1.0 && w[0].1.is_null(), "short pause: {good}");
    assert!(w[1].0 > 1.0, "long pause: {good}");
    let kinds: Vec<&String> = w[1].1.as_object().expect("violations").keys().collect();
    assert_eq!(kinds, ["mutex"], "{good}");

    let card = r["scorecard"]["cells"].as_array().unwrap();
    assert!(
        card.iter().any(|c| c["backend"] == "redis-broken-renew"
            && c["violations"]["foreign_renew"].as_u64() >= Some(1)),
        "{r}"
    );
    let _ = std::fs::remove_dir_all(run.parent().unwrap());
}
