//! Whether each server is serving, and waiting until all are.
//!
//! "Healthy" means what a lock client needs: ZooKeeper answers `srvr` with `Mode: leader` or
//! `Mode: follower` (and the ensemble has exactly one leader), etcd's `/health` says `true`
//! (it has a leader and a quorum), Redis answers `PING`.

use crate::topology::Topology;
use crate::{etcd, redis, zookeeper};
use futures::future::join_all;
use lockbench_core::ServerSpec;
use std::time::{Duration, Instant};

/// One probe's result.
#[derive(Clone, Debug, Default)]
pub(crate) struct Probe {
    pub healthy: bool,
    /// ZooKeeper's mode (`leader` / `follower`); `None` for the others.
    pub role: Option<String>,
}

/// Probes one server.
pub(crate) async fn probe(topo: &Topology, spec: &ServerSpec) -> Probe {
    let endpoint = topo.endpoint(spec);
    match spec.system.name() {
        "zookeeper" => {
            let role = zookeeper::srvr(&endpoint)
                .await
                .ok()
                .and_then(|s| zookeeper::mode(&s));
            let healthy = matches!(role.as_deref(), Some("leader" | "follower"));
            Probe { healthy, role }
        }
        "etcd" => Probe {
            healthy: etcd::healthy(&endpoint).await,
            role: None,
        },
        "redis" => Probe {
            healthy: redis::healthy(&endpoint).await,
            role: None,
        },
        "sentinel" => Probe {
            healthy: crate::sentinel::healthy(&endpoint).await,
            role: None,
        },
        other => unreachable!("no health probe for system {other}"),
    }
}

/// Probes servers concurrently, then marks every member of a single-leader group
/// ([`System::single_leader`](lockbench_core::System::single_leader): ZooKeeper) unhealthy
/// when the group has more than one leader (a split view during an election is not "up").
pub(crate) async fn probe_all(topo: &Topology, specs: &[&ServerSpec]) -> Vec<Probe> {
    let mut probes = join_all(specs.iter().map(|s| probe(topo, s))).await;
    for group in single_leader_groups(specs) {
        let members: Vec<usize> = (0..specs.len())
            .filter(|&i| specs[i].group == group)
            .collect();
        let leaders = members
            .iter()
            .filter(|&&i| probes[i].role.as_deref() == Some("leader"))
            .count();
        if leaders > 1 {
            for &i in &members {
                probes[i].healthy = false;
            }
        }
    }
    probes
}

/// The single-leader groups among `specs`.
fn single_leader_groups(specs: &[&ServerSpec]) -> Vec<lockbench_core::Group> {
    let mut groups = Vec::new();
    for s in specs.iter().filter(|s| s.system.single_leader()) {
        if !groups.contains(&s.group) {
            groups.push(s.group);
        }
    }
    groups
}

/// Waits until every server in `specs` is healthy and every single-leader group among them
/// (ZooKeeper) has exactly one leader. Returns the names still unhealthy at the deadline.
pub(crate) async fn wait_healthy(
    topo: &Topology,
    specs: &[&'static ServerSpec],
    timeout: Duration,
) -> Result<(), Vec<&'static str>> {
    let single = single_leader_groups(specs);
    let deadline = Instant::now() + timeout;
    loop {
        let probes = probe_all(topo, specs).await;
        let unhealthy: Vec<&'static str> = specs
            .iter()
            .zip(&probes)
            .filter(|(_, p)| !p.healthy)
            .map(|(s, _)| s.name)
            .collect();
        let one_leader = |g: &lockbench_core::Group| {
            let members = specs.iter().zip(&probes).filter(|(s, _)| s.group == *g);
            members
                .filter(|(_, p)| p.role.as_deref() == Some("leader"))
                .count()
                == 1
        };
        if unhealthy.is_empty() && single.iter().all(one_leader) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(unhealthy);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
