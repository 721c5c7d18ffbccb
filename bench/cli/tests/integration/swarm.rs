//! `lockbench run --workers swarm:N`: the clients in the tasks of a Docker Swarm service
//! (image `lockbench/lockbench:local`, never resolved at a registry), dialling in with the
//! run's secret from a Docker secret. `#[ignore]`d with the Docker flow's other heavy tests
//! (scripts/test's first phase, one at a time in nextest's `compose-containers` group): it
//! needs a Docker Engine and fails without one.

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

/// What the run may have left: services, secrets and containers labelled `lockbench.workers`.
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
    left
}

/// Two Swarm tasks carry the quick suite's eight clients on two backends: the run exits 0
/// with the local run's verdicts (safe), both tasks dialled in as `client1` and `client2`
/// (`{{.Task.Slot}}`) and were probed, and afterwards no service, secret or container of it is
/// left and the engine is in the swarm state it was in before (lockbench leaves a swarm it
/// made).
#[test]
#[ignore = "needs a Docker Engine and lockbench's image; scripts/test runs it in its first phase"]
fn a_quick_run_on_two_swarm_tasks_is_safe_and_leaves_nothing() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    if !docker(&["image", "inspect", "lockbench/lockbench:local"]).0 {
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
