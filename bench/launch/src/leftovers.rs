//! What a `kill -9` of a Swarm run leaves (its service, the tasks' containers and any
//! replacement container, its Docker secret, its `lockbench-net-*` network, and the swarm when
//! that run made it), and removing it: at the start of every Swarm run and in `lockbench
//! down`.
//!
//! Why it can be told apart from a live run's: every object carries `lockbench.workers=<id>`,
//! the id starting with the coordinator's pid, and `lockbench.pidns=<inode>`, the pid
//! namespace that pid is in. An object is a leftover when its pid namespace is this process's
//! and no `lockbench` process has that pid any more. An object of another pid namespace (a
//! run inside a container) is never touched: its pid means nothing here. A swarm lockbench
//! initialised carries the node label `lockbench.swarm=<id>`; a run that finds it on a dead
//! run's id takes it over (relabels it and leaves the swarm at its own end, as that run would
//! have).

use crate::swarm::{LABEL, docker, remove_network};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The label naming the pid namespace of a run's coordinator.
pub(crate) const PIDNS_LABEL: &str = "lockbench.pidns";
/// The swarm node label of a swarm a run initialised.
pub(crate) const SWARM_LABEL: &str = "lockbench.swarm";

/// This process's pid namespace (the inode of `/proc/self/ns/pid`), `unknown` when unreadable.
pub(crate) fn pidns() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|l| {
            let l = l.to_string_lossy().to_string();
            l.strip_prefix("pid:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Whether the run that labelled an object `labels` is gone: same pid namespace (or none
/// recorded) and no `lockbench` process with its pid.
fn dead(labels: &BTreeMap<String, String>, ns: &str) -> bool {
    let Some(id) = labels.get(LABEL).or_else(|| labels.get(SWARM_LABEL)) else {
        return false;
    };
    if labels.get(PIDNS_LABEL).is_some_and(|l| l != ns) {
        return false;
    }
    let Some(pid) = id.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    !alive(pid)
}

/// A `lockbench` process with `pid` exists (one whose executable cannot be read, another
/// user's, counts as alive: never remove what might be a live run's).
fn alive(pid: u32) -> bool {
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    if !proc.exists() {
        return false;
    }
    match std::fs::read_link(proc.join("exe")) {
        Ok(exe) => exe
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("lockbench")),
        Err(_) => true,
    }
}

/// `docker <kind> inspect` of `name`'s labels.
fn labels(kind: &str, format: &str, name: &str) -> BTreeMap<String, String> {
    docker(&[kind, "inspect", "--format", format, name])
        .ok()
        .and_then(|j| serde_json::from_str::<Option<BTreeMap<String, String>>>(&j).ok())
        .flatten()
        .unwrap_or_default()
}

/// The objects of `kind` labelled `lockbench.workers` whose run is gone.
fn dead_objects(kind: &str, ns: &str) -> Vec<String> {
    let (list, format): (Vec<&str>, &str) = match kind {
        "container" => (vec!["ps", "-a"], "{{json .Config.Labels}}"),
        "network" => (vec!["network", "ls"], "{{json .Labels}}"),
        other => (vec![other, "ls"], "{{json .Spec.Labels}}"),
    };
    let filter = format!("label={LABEL}");
    let mut args = list;
    args.extend(["--filter", &filter, "--format", "{{.Names}}"]);
    if kind != "container" {
        *args.last_mut().expect("format") = "{{.Name}}";
    }
    let Ok(names) = docker(&args) else {
        return Vec::new();
    };
    names
        .lines()
        .filter(|n| !n.is_empty())
        .filter(|n| dead(&labels(kind, format, n), ns))
        .map(str::to_string)
        .collect()
}

/// What a sweep removed, and whether it found a swarm a dead run initialised (the caller
/// that goes on using the swarm takes it over; `lockbench down` leaves it).
#[derive(Debug, Default)]
pub(crate) struct Swept {
    pub(crate) removed: Vec<String>,
    /// The node of a swarm a dead run initialised.
    pub(crate) orphan_swarm: Option<String>,
}

/// Removes the Swarm objects of runs that are gone (see the module's docs). Only asks
/// Docker: with no engine or no swarm it removes nothing.
pub(crate) fn sweep() -> Swept {
    let mut swept = Swept::default();
    let Ok(state) = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"]) else {
        return swept;
    };
    let ns = pidns();
    let active = state == "active";
    if active {
        for service in dead_objects("service", &ns) {
            if docker(&["service", "rm", &service]).is_ok() {
                swept.removed.push(format!("service {service}"));
            }
        }
    }
    for container in dead_objects("container", &ns) {
        if docker(&["rm", "-f", &container]).is_ok() {
            swept.removed.push(format!("container {container}"));
        }
    }
    if active {
        // A service's containers go after `service rm` returns; its secret cannot go before.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut secrets = dead_objects("secret", &ns);
        while !secrets.is_empty() && Instant::now() < deadline {
            secrets.retain(|s| match docker(&["secret", "rm", s]) {
                Ok(_) => {
                    swept.removed.push(format!("secret {s}"));
                    false
                }
                Err(_) => true,
            });
            if !secrets.is_empty() {
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
    for network in dead_objects("network", &ns) {
        if remove_network(&network).is_ok() {
            swept.removed.push(format!("network {network}"));
        }
    }
    if active
        && let Ok(node) = docker(&["info", "--format", "{{.Swarm.NodeID}}"])
        && dead(&labels("node", "{{json .Spec.Labels}}", &node), &ns)
    {
        swept.orphan_swarm = Some(node);
    }
    swept
}

/// Removes what Swarm runs that are no longer alive left (a `kill -9`: their service, task and
/// replacement containers, secret and `lockbench-net-*` network), and leaves a swarm such a
/// run made when no run's workers are on it. Returns what it removed, for `lockbench down`.
/// With no Docker Engine, or no swarm, it removes nothing.
pub fn remove_swarm_leftovers() -> Vec<String> {
    let swept = sweep();
    let mut removed = swept.removed;
    let busy = docker(&[
        "service",
        "ls",
        "-q",
        "--filter",
        &format!("label={}", LABEL),
    ])
    .map_or(true, |s| !s.is_empty());
    if swept.orphan_swarm.is_some() && !busy && docker(&["swarm", "leave", "--force"]).is_ok() {
        removed.push("the swarm a dead run made (`docker swarm leave --force`)".into());
    }
    removed
}
