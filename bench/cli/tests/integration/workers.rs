//! `lockbench run --workers dial:N`: the run's clients in N workers that dial in over TCP with
//! the run's secret, on their own clocks, against the shared managed cluster. (Swarm's
//! launcher is tested in `swarm`, with the heavy Docker tests.)

use crate::common::{result_of, results, run_quietly, text};

/// Two workers share eight clients (slots spread round robin), every client acquires, the
/// merged histogram counts every measured acquisition, the result has a `clocks` section
/// with both workers' probes and bounds, and the verdicts are those of a local run: safe.
#[test]
fn a_quick_run_on_two_dialled_in_workers_is_judged_across_their_clocks() {
    let backends = ["zk-fair", "etcd-lease"];
    let (out, dir) = run_quietly(
        "workers",
        "dial",
        "quick",
        &[
            "workers.launcher=dial",
            "workers.count=2",
            "duration=2s",
            "warmup=500ms",
            "backends=zk-fair,etcd-lease",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("`dial` launcher"), "{said}");
    let r = results(&dir);
    for backend in backends {
        let b = result_of(&r, backend);
        assert_eq!(b["safety"]["verdict"], "valid", "{backend}: {b}");
        let per_client: Vec<u64> = b["per_client_acquisitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert_eq!(per_client.len(), 8, "{backend}: {per_client:?}");
        assert!(
            per_client.iter().all(|&n| n > 0),
            "{backend}: {per_client:?}"
        );
        assert_eq!(
            b["acquire_latency_us"]["count"], b["acquisitions"],
            "{backend}: the merged histogram holds every measured acquisition"
        );
        let clocks = &b["clocks"];
        let workers = clocks["workers"].as_array().expect("a clocks section");
        let names: Vec<&str> = workers
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["client1", "client2"], "{backend}: {clocks}");
        assert_eq!(workers[0]["slots"], serde_json::json!([0, 2, 4, 6]));
        assert_eq!(workers[1]["slots"], serde_json::json!([1, 3, 5, 7]));
        for w in workers {
            assert!(w["probes"].as_u64().unwrap() >= 1, "{backend}: {w}");
            assert!(w["offset_ms"].is_number(), "{backend}: {w}");
            let bound = w["bound_ms"].as_f64().unwrap();
            assert!(bound > 0.0 && bound < 1_000.0, "{backend}: {w}");
        }
        assert_eq!(
            clocks["judgement"]["overlaps_certain"], 0,
            "{backend}: {clocks}"
        );
        assert_eq!(
            clocks["judgement"]["lost_writes_certain"], 0,
            "{backend}: {clocks}"
        );
    }
}

/// `--workers external:2 --listen ADDR`: the run starts nothing and waits for two workers
/// started by hand with the secret from its environment; a third with a wrong secret (named
/// like one of them) is refused, by address in the run's log and by reason on its own stderr,
/// without either secret, and the run goes on with the honest two, safe, both on their own
/// clocks.
#[test]
fn a_run_waits_for_external_workers_and_refuses_a_wrong_secret() {
    use lockbench_workloads::dial::{RunSecret, SECRET_ENV};
    use std::process::{Command, Stdio};
    let dir = crate::common::scratch("workers", "external");
    let cluster = crate::common::external_cluster(&dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let secret = RunSecret::generate().to_env_value();
    let wrong = RunSecret::generate().to_env_value();
    let out_dir = dir.join("run");
    let run = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "quick", "--cluster", &cluster, "--out"])
        .arg(&out_dir)
        .args(["--workers", "external:2", "--listen", &addr])
        .args(["--set", "duration=2s", "--set", "warmup=500ms"])
        .args(["--set", crate::common::NO_WARM_UP])
        .args(["--set", "backends=etcd-lease"])
        .env(SECRET_ENV, &secret)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let worker = |name: &str, with: &str| {
        Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .args(["worker", "--coordinator", &addr, "--name", name])
            .args(["--patience", "60s"])
            .env(SECRET_ENV, with)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let intruder = worker("client1", &wrong).wait_with_output().unwrap();
    let honest = [worker("client1", &secret), worker("client2", &secret)];
    let out = run.wait_with_output().unwrap();
    for w in honest {
        let _ = w.wait_with_output();
    }
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let intruder_said = String::from_utf8_lossy(&intruder.stderr);
    assert!(!intruder.status.success());
    assert!(
        intruder_said.contains("refused this worker: wrong secret"),
        "{intruder_said}"
    );
    let log = std::fs::read_to_string(out_dir.join("lockbench.log")).unwrap();
    assert!(
        log.contains("refused a worker from 127.0.0.1:") && log.contains("\"client1\""),
        "{log}"
    );
    for text in [&log, &said, &intruder_said.to_string()] {
        assert!(!text.contains(&secret) && !text.contains(&wrong));
    }
    let r = results(&out_dir);
    let b = result_of(&r, "etcd-lease");
    assert_eq!(b["safety"]["verdict"], "valid", "{b}");
    let names: Vec<&str> = b["clocks"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["client1", "client2"], "{b}");
}

/// The kill-and-restart scenario on two workers that dial in (`launcher`): `client1` (slot 0)
/// killed at 1 s, paused at 5 s.
pub(crate) fn kill_scenario(launcher: &str) -> String {
    format!(
        r#"
name = "remote-respawn"
backends = ["etcd-lease"]
duration = "8s"
warmup = "0s"
recovery = "2s"
[workload]
clients = 2
keys = 2
key_choice = "per-client"
[etcd]
lease_ttl = "2s"
[workers]
launcher = "{launcher}"
count = 2
[[faults]]
fault = "kill"
targets = {{ nodes = ["client1"] }}
at = "1s"
[[faults]]
fault = "pause"
targets = {{ nodes = ["client1"] }}
at = "5s"
duration = "1s"
"#
    )
}

/// What a run of [`kill_scenario`] must show: what [`crate::common::check_kill_restarted`]
/// checks, a safe verdict, and two clock entries for `client1` (the dead process's and its
/// successor's, probed afresh). Returns the history.
pub(crate) fn check_restarted(
    out: &std::process::Output,
    run: &std::path::Path,
    restarted_as: &str,
) -> Vec<serde_json::Value> {
    let h = crate::common::check_kill_restarted(out, run, "etcd-lease", restarted_as);
    let r = results(run);
    let b = result_of(&r, "etcd-lease");
    assert_eq!(b["safety"]["verdict"], "valid", "{b}");
    let clocks: Vec<&serde_json::Value> = b["clocks"]["workers"]
        .as_array()
        .expect("a clocks section")
        .iter()
        .filter(|w| w["name"] == "client1")
        .collect();
    assert_eq!(clocks.len(), 2, "client1 and its successor: {b}");
    assert!(
        clocks[1]["probes"].as_u64().unwrap() >= 1,
        "the successor was probed: {b}"
    );
    h
}

/// A `kill` of a worker that dialled in (the `dial` launcher's child process) is answered as
/// for a worker process: a fresh child dials in under the same name with the run's secret, is
/// admitted again, gets the dead one's slots, is granted again, and a later pause finds it;
/// no worker process is left after the run.
#[test]
fn a_killed_dialled_in_worker_is_restarted_and_granted_again() {
    let dir = crate::common::scratch("workers", "respawn");
    let tag = format!("workers-respawn-{}", std::process::id());
    let (out, run) = crate::common::scenario_run(&dir, &tag, &kill_scenario("dial"));
    check_restarted(&out, &run, "restarted as a fresh worker process");
    assert!(
        crate::common::wait_until_gone(&tag, std::time::Duration::from_secs(10)).is_empty(),
        "worker processes left behind"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
