//! Whether each server is serving, and waiting until all are.
//!
//! "Healthy" means what a lock client needs, as each system says
//! ([`System::health`](lockbench_core::System::health)): ZooKeeper answers `srvr` with
//! `Mode: leader` or `Mode: follower` (and the ensemble has exactly one leader: a
//! [`single_leader`](lockbench_core::System::single_leader) system), etcd's `/health` says
//! `true` (it has a leader and a quorum), Redis answers `PING`, a Sentinel names a primary.
//! On a secure cluster a secured server ([`crate::secure::connection_for`]) is asked over TLS with the client certificate, logged in as lockbench's user: the way its
//! clients reach it.

use crate::net::{self, SecureProbe};
use crate::topology::Topology;
use futures::future::join_all;
use lockbench_core::{Probe, ServerSpec};
use std::time::{Duration, Instant};

/// Probes one server: its system's [`System::health_check`](lockbench_core::System::health_check),
/// read by its [`System::health`](lockbench_core::System::health); no answer is unhealthy.
pub(crate) async fn probe(topo: &Topology, spec: &ServerSpec, sec: Option<&SecureProbe>) -> Probe {
    let check = spec.system.health_check(&topo.endpoint(spec));
    let reply = match sec.filter(|_| crate::secure::honoured(spec)) {
        Some(sec) => net::secure_exchange(&check, sec, spec.system).await,
        None => net::exchange(&check).await,
    };
    match reply {
        Ok(reply) => spec.system.health(&reply),
        Err(_) => Probe::default(),
    }
}

/// Probes servers concurrently, then marks every member of a single-leader group
/// ([`System::single_leader`](lockbench_core::System::single_leader): ZooKeeper) unhealthy
/// when the group has more than one leader (a split view during an election is not "up").
pub(crate) async fn probe_all(
    topo: &Topology,
    specs: &[&ServerSpec],
    sec: Option<&SecureProbe>,
) -> Vec<Probe> {
    let mut probes = join_all(specs.iter().map(|s| probe(topo, s, sec))).await;
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
    sec: Option<&SecureProbe>,
    timeout: Duration,
) -> Result<(), Vec<&'static str>> {
    let single = single_leader_groups(specs);
    let deadline = Instant::now() + timeout;
    loop {
        let probes = probe_all(topo, specs, sec).await;
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
