//! `lockbench run --workers swarm:N`: the clients in the tasks of a Docker Swarm service
//! (image `lockbench/lockbench:local`, never resolved at a registry), dialling in with the
//! run's secret from a Docker secret. `#[ignore]`d with the Docker flow's other heavy tests
//! (scripts/test runs them beside the other tests, after the cluster's lifecycle test, one at a
//! time in nextest's `compose-containers` group): it needs a Docker Engine and fails without
//! one.

use crate::common::{result_of, results, run_quietly, text};
use std::path::PathBuf;
use std::process::Command;

fn docker(args: &[&str]) -> (bool, String) {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

fn swarm_state() -> String {
    let (ok, state) = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"]);
    assert!(ok, "no Docker Engine answers");
    state
}

/// What the run may have left: services, secrets, networks and containers labelled
/// `lockbench.workers`.
fn leftovers() -> Vec<String> {
    let mut left = Vec::new();
    if swarm_state() == "active" {
        for what in ["service", "secret"] {
            let (_, ids) = docker(&[what, "ls", "-q", "--filter", "label=lockbench.workers"]);
            left.extend(ids.lines().map(|l| format!("{what} {l}")));
        }
    }
    let (_, ids) = docker(&["ps", "-aq", "--filter", "label=lockbench.workers"]);
    left.extend(ids.lines().map(|l| format!("container {l}")));
    let (_, ids) = docker(&["network", "ls", "-q", "--filter", "label=lockbench.workers"]);
    left.extend(ids.lines().map(|l| format!("network {l}")));
    left
}

/// Builds lockbench's image from this test's binary when it is missing (whichever Swarm test
/// runs first on a fresh machine), checks that nothing of a Swarm run is there, and returns
/// the swarm state to find again after the test's run.
fn ready_to_run() -> String {
    if !docker(&["image", "inspect", "lockbench/lockbench:local"]).0 {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let built = Command::new(root.join("scripts/build-images"))
            .arg("--lockbench")
            .env("LOCKBENCH_BINARY", env!("CARGO_BIN_EXE_lockbench"))
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(built.success(), "scripts/build-images --lockbench failed");
    }
    let before = swarm_state();
    assert!(leftovers().is_empty(), "left before: {:?}", leftovers());
    before
}

/// Two Swarm tasks carry the quick suite's eight clients on two backends: the run exits 0
/// with the local run's verdicts (safe), both tasks dialled in as `client1` and `client2`
/// (`{{.Task.Slot}}`) and were probed, and afterwards no service, secret or container of it is
/// left and the engine is in the swarm state it was in before (lockbench leaves a swarm it
/// made).
#[test]
#[ignore = "needs a Docker Engine and lockbench's image; scripts/test runs it with the other tests"]
fn a_quick_run_on_two_swarm_tasks_is_safe_and_leaves_nothing() {
    let before = ready_to_run();
    let (out, dir) = run_quietly(
        "swarm",
        "quick",
        "quick",
        &[
            "workers.launcher=swarm",
            "workers.count=2",
            "duration=2s",
            "warmup=500ms",
            "backends=zk-fair,etcd-lease",
        ],
    );
    let said = text(&out);
    assert_eq!(swarm_state(), before, "the swarm state changed: {said}");
    assert!(leftovers().is_empty(), "left: {:?}; {said}", leftovers());
    assert!(out.status.success(), "{said}");
    assert!(said.contains("swarm: service lockbench-workers-"), "{said}");
    let r = results(&dir);
    for backend in ["zk-fair", "etcd-lease"] {
        let b = result_of(&r, backend);
        assert_eq!(b["safety"]["verdict"], "valid", "{backend}: {b}");
        let workers = b["clocks"]["workers"].as_array().expect("a clocks section");
        let names: Vec<&str> = workers
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["client1", "client2"], "{backend}: {b}");
        assert!(
            workers.iter().all(|w| w["probes"].as_u64().unwrap() >= 1),
            "{backend}: {b}"
        );
        assert_eq!(b["clocks"]["judgement"]["overlaps_certain"], 0, "{backend}");
    }
}

/// partition.rs's scenario (etcd-lease, `client1` isolated for 4 s) with its two workers in
/// Swarm tasks: on the managed cluster they are on a bridge network of the run's own, so
/// `client1`'s container has a network namespace, where the partition's DROP rules go.
fn partition_scenario() -> String {
    format!(
        "{}\n[workers]\nlauncher = \"swarm\"\ncount = 2\n",
        crate::partition::SCENARIO
    )
}

/// `isolate = { nodes = ["client1"] }` with `client1` in a Swarm task on the managed cluster
/// is applied inside the task's container and checked from there (no server reachable), no
/// `client1` acquire succeeds while it holds (after the first second, when what was in flight
/// has ended) while `client2` goes on, `client1` acquires again within 5 s of the heal, and
/// nothing is left: no service, secret, network or container, the swarm state as before.
#[test]
#[ignore = "needs a Docker Engine and lockbench's image; scripts/test runs it with the other tests"]
fn a_partition_of_a_swarm_task_cuts_its_container_and_leaves_nothing() {
    if crate::partition::netns_or_skip("it isolates a Swarm task's container").is_none() {
        return;
    }
    let before = ready_to_run();
    let (out, run) = managed_run("partition", &partition_scenario());
    let said = text(&out);
    assert_eq!(swarm_state(), before, "the swarm state changed: {said}");
    assert!(leftovers().is_empty(), "left: {:?}; {said}", leftovers());
    assert!(out.status.success(), "{said}");
    assert!(said.contains("network lockbench-net-"), "{said}");
    let mut history: Vec<serde_json::Value> = crate::common::history_text(&run)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    history.sort_by_key(|e| e["t"].as_u64().unwrap_or(0));
    let phase = |p: &str| {
        history
            .iter()
            .find(|e| e["type"] == "nemesis" && e["fault"] == "partition" && e["phase"] == p)
            .unwrap_or_else(|| panic!("no partition {p} in the history\n{said}"))
    };
    let (start, stop) = (phase("start"), phase("stop"));
    assert_eq!(start["applied"], true, "{start}\n{said}");
    assert!(
        start["note"]
            .as_str()
            .unwrap()
            .contains("checked: client1 reach(es) none of the servers it lost"),
        "{start}"
    );
    let secs = |e: &serde_json::Value| e["t"].as_u64().unwrap() as f64 / 1e9;
    let (t0, t1) = (secs(start), secs(stop));
    // Two slots: client1's client ids are even.
    let isolated = |e: &serde_json::Value| e["client"].as_u64().is_some_and(|c| c % 2 == 0);
    let granted = |e: &&serde_json::Value| e["f"] == "acquire" && e["type"] == "ok";
    let ops = || history.iter().filter(|e| e["type"] != "nemesis");
    let inside = ops()
        .filter(granted)
        .find(|e| isolated(e) && secs(e) > t0 + 1.0 && secs(e) < t1);
    assert!(
        inside.is_none(),
        "client1 was granted while cut: {inside:?}"
    );
    assert!(
        ops()
            .filter(granted)
            .any(|e| !isolated(e) && secs(e) > t0 + 1.0 && secs(e) < t1),
        "client2 got no lock during the partition\n{said}"
    );
    let recovered = ops()
        .filter(granted)
        .find(|e| isolated(e) && secs(e) > t1)
        .unwrap_or_else(|| panic!("client1 never acquired after the heal\n{said}"));
    assert!(
        secs(recovered) - t1 < 5.0,
        "client1 recovered late: {recovered}"
    );
    let _ = std::fs::remove_dir_all(run.parent().unwrap());
}

/// Runs scenario text `toml` on the managed cluster (so Swarm tasks get the run's bridge
/// network), in a fresh directory for test `name`; returns the output and the run directory.
fn managed_run(name: &str, toml: &str) -> (std::process::Output, PathBuf) {
    let dir = crate::common::scratch("swarm", name);
    std::fs::write(dir.join("scenario.toml"), toml).unwrap();
    let run = dir.join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            dir.join("scenario.toml").to_str().unwrap(),
            "--quiet",
        ])
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    (out, run)
}

/// workers.rs's kill scenario on two Swarm tasks: `client1`'s task is killed, a replacement
/// container (`<service>.1.restart1`) is started on the run's network with the secret as a
/// file, dials in as `client1`, is admitted, granted again, and paused later; the verdict is
/// safe; nothing is left (the replacement container, service, secret, network) and the swarm
/// is in the state it was in.
#[test]
#[ignore = "needs a Docker Engine and lockbench's image; scripts/test runs it with the other tests"]
fn a_killed_swarm_task_is_replaced_on_its_network_and_leaves_nothing() {
    let before = ready_to_run();
    let (out, run) = managed_run("respawn", &crate::workers::kill_scenario("swarm"));
    let said = text(&out);
    assert_eq!(swarm_state(), before, "the swarm state changed: {said}");
    assert!(leftovers().is_empty(), "left: {:?}; {said}", leftovers());
    assert!(said.contains("network lockbench-net-"), "{said}");
    crate::workers::check_restarted(&out, &run, ".1.restart1");
}

/// A `kill -9` of a Swarm run leaves its service, secret and `lockbench-net-*` network (and
/// the swarm, when it made it); the next Swarm run removes them when it starts, says so,
/// leaves the swarm as it was before the killed run, and leaves nothing itself.
#[test]
#[ignore = "needs a Docker Engine and lockbench's image; scripts/test runs it with the other tests"]
fn what_a_killed_swarm_run_left_is_removed_by_the_next_one() {
    let before = ready_to_run();
    let dir = crate::common::scratch("swarm", "killed");
    let toml = "name = \"killed\"\nbackends = [\"etcd-lease\"]\nduration = \"60s\"\n\
                [workload]\nclients = 1\nkeys = 1\n[workers]\nlauncher = \"swarm\"\ncount = 1\n";
    std::fs::write(dir.join("scenario.toml"), toml).unwrap();
    let log = dir.join("victim.log");
    let mut victim = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", dir.join("scenario.toml").to_str().unwrap(), "--out"])
        .arg(dir.join("run"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Its task's container runs once the service is up; two more seconds for it to dial in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while docker(&["ps", "-q", "--filter", "label=lockbench.workers"])
        .1
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no task container: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = victim.wait();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let left = leftovers();
    assert!(
        left.iter().any(|l| l.starts_with("network "))
            && left.iter().any(|l| l.starts_with("service ")),
        "a kill -9 should leave its network and service: {left:?}\n{said}"
    );
    let (out, _) = run_quietly(
        "swarm",
        "after-kill",
        "quick",
        &[
            "workers.launcher=swarm",
            "workers.count=1",
            "duration=1s",
            "warmup=0s",
            "backends=etcd-lease",
        ],
    );
    let after = text(&out);
    assert!(out.status.success(), "{after}");
    assert!(
        after.contains("removed what runs no longer alive left:")
            && after.contains("network lockbench-net-"),
        "{after}"
    );
    assert_eq!(swarm_state(), before, "the swarm state changed: {after}");
    assert!(leftovers().is_empty(), "left: {:?}; {after}", leftovers());
    let _ = std::fs::remove_dir_all(&dir);
}
