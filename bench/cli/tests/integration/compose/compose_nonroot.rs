//! The compose flow for a user who can only talk to the Docker API: a user made for the test
//! (not root, in the `docker` group; removed at the end) runs `lockbench run chaos-quick
//! --cluster compose` and a short packet-loss scenario with `runuser`. chaos-quick runs
//! [`HOST_BACKENDS`], one recipe on each system with a leader, so every fault it schedules acts
//! on every system's containers; its other three backends run in lockbench's own image
//! (`compose_image`), so the compose test runs each of chaos-quick's backends once. lockbench must say it
//! goes through Docker (it cannot enter the containers' namespaces), and every fault must be
//! applied and checked that way: the holder's pauses through `docker kill --signal`, the
//! leader's pause through `docker pause`, the partition as iptables rules added by `docker
//! exec` inside the containers (checked by connects from inside them), the link delay in the
//! coordinator's proxies, the packet loss's rules counted inside the container.

use super::{common, ok};
use std::path::Path;
use std::process::Command;

/// chaos-quick's backends this user runs on the host (the others run in the `lockbench`
/// service: [`super::compose_image::SERVICE_BACKENDS`]).
pub const HOST_BACKENDS: &str = "zk-fair,etcd-lease,redis-setnx";

/// The test's user: not root, in the `docker` group; removed when dropped.
struct DockerUser(&'static str);

impl DockerUser {
    fn create() -> DockerUser {
        let name = "lockbench-test";
        let _ = Command::new("userdel").arg(name).output();
        ok(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "--groups",
            "docker",
            name,
        ]));
        DockerUser(name)
    }

    /// `lockbench <args>` as this user, in `dir` (its HOME too, owned by it).
    fn lockbench(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        ok(Command::new("chown").arg(self.0).arg(dir));
        Command::new("runuser")
            .args(["-u", self.0, "--", "env"])
            .arg(format!("HOME={}", dir.display()))
            .arg(env!("CARGO_BIN_EXE_lockbench"))
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run lockbench as the test's user")
    }
}

impl Drop for DockerUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(self.0).output();
    }
}

/// Every fault window of `r`, as (backend, window).
fn windows(r: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|x| {
            let b = x["backend"].as_str().unwrap().to_string();
            x["fault_windows"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |w| (b.clone(), w))
        })
        .collect()
}

pub fn faults_apply_for_a_user_in_the_docker_group() {
    let user = DockerUser::create();
    let dir = common::scratch("compose", "nonroot");
    let out = user.lockbench(
        &dir,
        &[
            "run",
            "chaos-quick",
            "--set",
            &format!("backends={HOST_BACKENDS}"),
            "--quiet",
            "--cluster",
            "compose",
            "--out",
            "cq",
        ],
    );
    let text = common::text(&out);
    assert!(out.status.success(), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = stderr.lines().take(3).collect();
    assert!(
        first
            .iter()
            .any(|l| l.contains(lockbench_compose::Access::Exec.describe())),
        "the first lines do not say the faults go through the Docker API: {first:#?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("EXPECTATIONS MET ("),
        "{text}"
    );
    let r = common::results(&dir.join("cq"));
    let all = windows(&r);
    let mut kinds = std::collections::BTreeSet::new();
    for backend in HOST_BACKENDS.split(',') {
        let applied: std::collections::BTreeSet<&str> = all
            .iter()
            .filter(|(b, w)| b == backend && w["applied"] == true)
            .filter_map(|(_, w)| w["fault"].as_str())
            .collect();
        for kind in ["pause", "partition", "link-delay"] {
            assert!(
                applied.contains(kind),
                "{backend}: no {kind} applied: {all:?}"
            );
        }
    }
    for (backend, w) in &all {
        let note = w["note"].as_str().unwrap_or_default();
        // Redlock's five servers are independent: a leader target has nothing to act on, as
        // on every cluster (not a matter of access).
        if backend == "redlock" && note.contains("have no leader") {
            continue;
        }
        assert_eq!(w["applied"], true, "{backend}: not applied: {w}");
        kinds.insert(w["fault"].as_str().unwrap().to_string());
        if w["fault"] == "partition" {
            assert!(
                note.contains("checked:") && note.contains("no longer accept"),
                "{backend}: the partition was not checked: {note}"
            );
        }
        if w["fault"] == "pause" && w["targets"][0] == "client1" {
            assert!(note.contains("signalled through docker kill"), "{note}");
        }
    }
    for kind in ["pause", "partition", "link-delay"] {
        assert!(kinds.contains(kind), "no {kind} applied: {kinds:?}");
    }

    // Packet loss: rules added by iptables-restore through docker exec, their counters read
    // the same way, the probe's share within the tolerance.
    let scenario = dir.join("loss.toml");
    std::fs::write(
        &scenario,
        "name = \"loss-exec\"\nseed = 1\nbackends = [\"redis-setnx\"]\nduration = \"4s\"\n\
         warmup = \"1s\"\nrecovery = \"1s\"\n[workload]\nclients = 2\nkeys = 1\n\
         [[faults]]\nfault = \"packet-loss\"\ntargets = \"all\"\nrate = 0.25\nmode = \"nth\"\n\
         at = \"1s\"\nduration = \"2s\"\n",
    )
    .unwrap();
    let out = user.lockbench(
        &dir,
        &[
            "run",
            "loss.toml",
            "--quiet",
            "--cluster",
            "compose",
            "--out",
            "loss",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out));
    let loss = windows(&common::results(&dir.join("loss")));
    assert_eq!(loss.len(), 1, "{loss:?}");
    let w = &loss[0].1;
    assert_eq!(w["applied"], true, "{w}");
    assert!(
        w["note"].as_str().unwrap().contains("packets dropped"),
        "the rules' counters were not read: {w}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
