//! End-to-end tests of the chaos controller's client side against the real managed cluster:
//! the fencing workload's real SIGSTOP of a worker process, the fenced resource service, and
//! the cleanup of worker processes.
//!
//! Runs use `--cluster external:FILE` with the managed cluster's endpoints, so a test never
//! starts or stops servers other tests use. Short TTLs and session timeouts keep them fast;
//! every wait polls with a generous upper bound (a loaded 2-core machine is slow, not wrong).

use crate::common;

use crate::common::{
    external_cluster, history, result_of, results, scenario_run, tagged_processes, text,
    wait_until_gone,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the built-in fencing scenario with `sets`, tagging every process with `tag` (an
/// environment variable the workers inherit, so the test can find them).
fn fencing_run(dir: &Path, tag: &str, sets: &[&str]) -> (Output, PathBuf) {
    let out_dir = dir.join("run");
    let cluster = external_cluster(dir);
    let mut args = vec![
        "run",
        "fencing",
        "--quiet",
        "--cluster",
        &cluster,
        "--out",
        out_dir.to_str().unwrap(),
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(&args)
        .env("LOCKBENCH_TEST_TAG", tag)
        .output()
        .expect("run lockbench");
    (out, out_dir)
}

/// For ZooKeeper and etcd: while the holder is stopped, its session / lease expires and another
/// client is granted the lock; once resumed, the holder writes with its old token, and the
/// fenced resource rejects it and the checkers count it.
#[test]
fn a_paused_holders_lock_goes_to_another_client_and_its_stale_write_is_rejected() {
    let dir = common::scratch("chaos", "paused");
    let tag = format!("paused-{}", std::process::id());
    let (out, run) = fencing_run(
        &dir,
        &tag,
        &[
            "backends=zk-fair,etcd-lease",
            "duration=7s",
            "zookeeper.session_timeout=1s",
            "etcd.lease_ttl=2s",
            "resource=fenced",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&run);
    for backend in ["zk-fair", "etcd-lease"] {
        let res = result_of(&r, backend);
        assert_eq!(res["status"], "ok", "{backend}: {res}");
        let h = history(&run, backend);
        // The first pause window of the holder (client1).
        let start = h
            .iter()
            .find(|e| e["type"] == "nemesis" && e["phase"] == "start" && e["applied"] == true)
            .unwrap_or_else(|| panic!("{backend}: no applied pause in {}", text(&out)));
        let stop = h
            .iter()
            .find(|e| e["type"] == "nemesis" && e["phase"] == "stop")
            .unwrap_or_else(|| panic!("{backend}: pause never ended"));
        let (t0, t1) = (start["t"].as_u64().unwrap(), stop["t"].as_u64().unwrap());
        // Slot 0's clients are ids 0, 3, 6, ... (3 clients): anything else is a contender.
        let holder = |e: &Value| e["client"].as_u64().unwrap().is_multiple_of(3);
        let taken_over = h.iter().any(|e| {
            e["f"] == "acquire"
                && e["type"] == "ok"
                && !holder(e)
                && (t0..t1).contains(&e["t"].as_u64().unwrap())
        });
        assert!(
            taken_over,
            "{backend}: no other client was granted the lock while the holder was stopped"
        );
        let rejected = h.iter().any(|e| {
            e["f"] == "write"
                && holder(e)
                && e["t"].as_u64().unwrap() > t1
                && e["type"] == "fail"
                && e["stale"] == true
        });
        assert!(
            rejected,
            "{backend}: the resumed holder's stale write was not rejected"
        );
        let s = &res["safety"];
        assert!(
            s["stale_writes_rejected"].as_u64().unwrap() >= 1,
            "{backend}: {s}"
        );
        assert_eq!(s["stale_writes_accepted"], 0, "{backend}: {s}");
        assert!(
            s["writes_after_lock_lost"].as_u64().unwrap() >= 1,
            "{backend}: {s}"
        );
        assert!(
            res["fencing"]["holder_pauses"].as_u64().unwrap() >= 1,
            "{backend}"
        );
        assert_eq!(s["instrument_faults"], 0, "{backend}: {s}");
        // The scorecard shows the rejected writes apart from damage.
        let pause = r["scorecard"]["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["backend"] == backend && c["fault"] == "pause-client")
            .unwrap_or_else(|| panic!("{backend}: no pause-client cell: {r}"));
        assert!(
            pause["fenced"]["write_after_lock_lost_rejected"].as_u64() >= Some(1),
            "{pause}"
        );
        let damage = pause["violations"].as_object().unwrap();
        assert!(
            damage.keys().all(|k| k == "mutex"),
            "{backend}: damage besides the overlap: {pause}"
        );
        // The scenario's expectations: fencing held, so the run passes.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("EXPECTATION MET: {backend} fenced: ")),
            "{}",
            text(&out)
        );
    }
    assert!(
        r["scorecard"]["cells"].as_array().unwrap().len() >= 2,
        "{r}"
    );
    assert_eq!(
        wait_until_gone(&tag, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}

/// redis-setnx with an unfenced resource: the Kleppmann pause must produce counted damage
/// (the checkers are alive), and the worker processes must be gone after the run.
#[test]
fn redis_setnx_unfenced_pause_is_a_counted_violation_and_workers_are_gone_after() {
    let dir = common::scratch("chaos", "unfenced");
    let tag = format!("unfenced-{}", std::process::id());
    let (out, run) = fencing_run(
        &dir,
        &tag,
        &[
            "backends=redis-setnx",
            "duration=3s",
            "redis.ttl=300ms",
            "resource=unfenced",
        ],
    );
    // The fencing scenario expects every stale write rejected: with an unfenced resource that
    // expectation fails, and so does the run.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("EXPECTATION FAILED: redis-setnx fenced: "),
        "{}",
        text(&out)
    );
    let r = results(&run);
    let res = result_of(&r, "redis-setnx");
    let s = &res["safety"];
    assert_eq!(s["verdict"], "invalid", "{s}");
    assert!(s["stale_writes_accepted"].as_u64().unwrap() >= 1, "{s}");
    assert!(
        s["writes_after_lock_lost_accepted"].as_u64().unwrap() >= 1,
        "{s}"
    );
    assert!(s["mutex_violations"].as_u64().unwrap() >= 1, "{s}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("FINDING: redis-setnx"),
        "{}",
        text(&out)
    );
    assert_eq!(
        wait_until_gone(&tag, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}

/// Regression: a resource that accepts stale writes and calls them fresh made the run read
/// "0 stale writes accepted", like a correct one. The fencing audit recomputes staleness from
/// the history, reports the disagreement as an instrument fault and the verdict is unknown
/// (exit 2), against the real ZooKeeper ensemble and a real SIGSTOP of the holder.
#[test]
fn a_resource_that_calls_stale_writes_fresh_is_an_instrument_fault() {
    let dir = common::scratch("chaos", "misreporting");
    let tag = format!("misreporting-{}", std::process::id());
    let (out, run) = fencing_run(
        &dir,
        &tag,
        &[
            "backends=zk-fair",
            "duration=5s",
            "zookeeper.session_timeout=1s",
            "resource=misreporting",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let r = results(&run);
    let s = &result_of(&r, "zk-fair")["safety"];
    assert_eq!(s["verdict"], "unknown", "{s}");
    assert!(s["instrument_faults"].as_u64().unwrap() >= 1, "{s}");
    // The resource's own count hides the damage: exactly what the audit exists for.
    assert_eq!(s["stale_writes_accepted"], 0, "{s}");
    assert!(
        s["failed_checkers"][0]
            .as_str()
            .unwrap()
            .starts_with("instrument fault"),
        "{s}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("INSTRUMENT FAULT: zk-fair") && stdout.contains("EXPECTATION UNKNOWN"),
        "{}",
        text(&out)
    );
    assert!(wait_until_gone(&tag, Duration::from_secs(10)).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: releases were not checked. Under the fencing workload the paused holder's
/// lock expires and goes to another client; resumed, the holder releases. redis-setnx's
/// compare-and-delete refuses; redis-broken-release's plain `DEL` deletes the new holder's lock
/// and reports success, which the release checker must catch (real Redis, real SIGSTOP).
/// The fencing scenario expects the pause's `mutex` and no other kind, so
/// this release bug fails the run (exit 1) although a violation was expected of every recipe.
#[test]
fn a_release_that_deletes_another_clients_lock_is_caught() {
    let dir = common::scratch("chaos", "release");
    let tag = format!("release-{}", std::process::id());
    let (out, run) = fencing_run(
        &dir,
        &tag,
        &[
            "backends=redis-broken-release,redis-setnx",
            "duration=3s",
            "redis.ttl=300ms",
        ],
    );
    // The fencing scenario expects every recipe to violate by `mutex` (the pause): met for
    // redis-setnx, failed for redis-broken-release, whose foreign releases nobody expected.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed = stdout
        .lines()
        .find(|l| l.starts_with("EXPECTATION FAILED: redis-broken-release violated: invalid:"))
        .unwrap_or_else(|| panic!("{}", text(&out)));
    assert!(failed.contains("not expected: foreign_release"), "{failed}");
    assert!(
        stdout.contains("EXPECTATION MET: redis-setnx violated: invalid:"),
        "{}",
        text(&out)
    );
    // The last lines judge the run against its expectations first, then
    // name the violation nobody expected apart from the pause's expected overlaps.
    let headline = stdout
        .lines()
        .position(|l| l.starts_with("EXPECTATIONS FAILED ("))
        .unwrap_or_else(|| panic!("no headline: {}", text(&out)));
    let tail: Vec<&str> = stdout.lines().skip(headline).collect();
    assert!(tail.len() <= 4, "the headline closes the output: {tail:?}");
    assert!(
        tail[1].contains("as expected: redis-broken-release (")
            && tail[1].contains("redis-setnx (")
            && tail[1].contains("NOT expected: redis-broken-release (")
            && tail[1].contains("of another client's lock"),
        "{tail:?}"
    );
    assert!(
        tail[2].starts_with("UNEXPECTED: redis-broken-release: ")
            && tail[2].contains("of another client's lock")
            && !tail[2].contains("overlap"),
        "{tail:?}"
    );
    let r = results(&run);
    let broken = &result_of(&r, "redis-broken-release")["safety"];
    assert_eq!(broken["verdict"], "invalid", "{broken}");
    assert!(
        broken["foreign_releases"].as_u64().unwrap() >= 1,
        "{broken}"
    );
    assert_eq!(
        broken["checks"]["release"]["validity"], "invalid",
        "{broken}"
    );
    let good = &result_of(&r, "redis-setnx")["safety"];
    assert_eq!(good["foreign_releases"], 0, "{good}");
    assert!(
        good["checks"]["release"]["figures"]["releases_ok"].as_u64() > Some(10),
        "the checker judged redis-setnx's releases: {good}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("of another client's lock"),
        "{}",
        text(&out)
    );
    let card = r["scorecard"]["cells"].as_array().unwrap();
    assert!(
        card.iter().any(|c| c["backend"] == "redis-broken-release"
            && c["violations"]["foreign_release"].as_u64() >= Some(1)),
        "{r}"
    );
    assert!(wait_until_gone(&tag, Duration::from_secs(10)).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `kill -9` of the coordinator takes its worker processes down with it (PR_SET_PDEATHSIG),
/// even while a worker is stopped by a pause.
#[test]
fn workers_die_with_a_killed_coordinator() {
    let dir = common::scratch("chaos", "killed");
    let tag = format!("killed-{}", std::process::id());
    let cluster = external_cluster(&dir);
    let out_dir = dir.join("run");
    let mut coordinator = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "fencing",
            "--quiet",
            "--cluster",
            &cluster,
            "--out",
            out_dir.to_str().unwrap(),
            "--set",
            "backends=redis-setnx",
            "--set",
            "duration=60s",
            "--set",
            "workload.pause=2s",
        ])
        .env("LOCKBENCH_TEST_TAG", &tag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let me = coordinator.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let workers = loop {
        let w: Vec<u32> = tagged_processes(&tag)
            .into_iter()
            .filter(|p| *p != me)
            .collect();
        if !w.is_empty() {
            break w;
        }
        assert!(Instant::now() < deadline, "no worker process appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    // Let the run get going (the holder is likely stopped in a pause now and then).
    std::thread::sleep(Duration::from_millis(1500));
    coordinator.kill().unwrap();
    coordinator.wait().unwrap();
    let left = wait_until_gone(&tag, Duration::from_secs(15));
    assert!(
        left.is_empty(),
        "worker processes {workers:?} outlived the coordinator: {left:?} still alive"
    );
}

/// `workload.acquisitions` counts every process's grants toward one total: two worker
/// processes stop together near the target, not after the target each.
#[test]
fn stop_by_count_counts_worker_grants_toward_one_total() {
    let dir = common::scratch("chaos", "count");
    let tag = format!("count-{}", std::process::id());
    let (out, run) = scenario_run(
        &dir,
        &tag,
        r#"
name = "count"
backends = ["etcd-lease"]
duration = "0s"
warmup = "1s"
[workload]
clients = 2
keys = 2
key_choice = "per-client"
processes = "workers"
acquisitions = 600
"#,
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&run);
    let res = result_of(&r, "etcd-lease");
    assert_eq!(res["status"], "ok", "{res}");
    let measured = res["acquisitions"].as_u64().unwrap();
    // Each worker applying the whole count would make at least 1200; the coordinator counts
    // worker grants as their ops arrive (up to a quarter second late), so allow some slack.
    assert!(
        (450..900).contains(&measured),
        "{measured} measured acquisitions for a target of 600 over two workers\n{}",
        text(&out)
    );
    let per_client = res["per_client_acquisitions"].as_array().unwrap();
    assert!(
        per_client.iter().all(|n| n.as_u64().unwrap() > 100),
        "both workers must count: {per_client:?}"
    );
    assert!(wait_until_gone(&tag, Duration::from_secs(10)).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A killed client worker is replaced by a fresh process for its slot, which gets the lock
/// again, and a later fault on it (a pause) finds a process to stop.
#[test]
fn a_killed_client_worker_is_restarted_and_later_faults_still_find_it() {
    let dir = common::scratch("chaos", "respawn");
    let tag = format!("respawn-{}", std::process::id());
    let (out, run) = scenario_run(
        &dir,
        &tag,
        r#"
name = "respawn"
backends = ["etcd-lease"]
duration = "8s"
warmup = "0s"
recovery = "2s"
[workload]
clients = 2
keys = 2
key_choice = "per-client"
processes = "workers"
[etcd]
lease_ttl = "2s"
[[faults]]
fault = "kill"
targets = { nodes = ["client1"] }
at = "1s"
[[faults]]
fault = "pause"
targets = { nodes = ["client1"] }
at = "5s"
duration = "1s"
"#,
    );
    common::check_kill_restarted(&out, &run, "etcd-lease", "restarted");
    assert!(
        wait_until_gone(&tag, Duration::from_secs(10)).is_empty(),
        "worker processes left behind"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
