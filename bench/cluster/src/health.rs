//! Whether each server is serving, and waiting until all are.
//!
//! "Healthy" means what a lock client needs: ZooKeeper answers `srvr` with `Mode: leader` or
//! `Mode: follower` (and the ensemble has exactly one leader), etcd's `/health` says `true`
//! (it has a leader and a quorum), Redis answers `PING`.

use crate::spec::{ServerSpec, System};
use crate::topology::Topology;
use crate::{etcd, redis, zookeeper};
use futures::future::join_all;
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
    match spec.system {
        System::Zookeeper => {
            let role = zookeeper::srvr(&endpoint)
                .await
                .ok()
                .and_then(|s| zookeeper::mode(&s));
            let healthy = matches!(role.as_deref(), Some("leader" | "follower"));
            Probe { healthy, role }
        }
        System::Etcd => Probe {
            healthy: etcd::healthy(&endpoint).await,
            role: None,
        },
        System::Redis => Probe {
            healthy: redis::healthy(&endpoint).await,
            role: None,
        },
        System::Sentinel => Probe {
            healthy: crate::sentinel::healthy(&endpoint).await,
            role: None,
        },
    }
}

/// Probes servers concurrently, then marks every ZooKeeper member unhealthy when the ensemble
/// does not have exactly one leader (a split view during an election is not "up").
pub(crate) async fn probe_all(topo: &Topology, specs: &[&ServerSpec]) -> Vec<Probe> {
    let mut probes = join_all(specs.iter().map(|s| probe(topo, s))).await;
    let zk: Vec<usize> = (0..specs.len())
        .filter(|&i| specs[i].system == System::Zookeeper)
        .collect();
    let leaders = zk
        .iter()
        .filter(|&&i| probes[i].role.as_deref() == Some("leader"))
        .count();
    if leaders > 1 {
        for &i in &zk {
            probes[i].healthy = false;
        }
    }
    probes
}

/// Waits until every server in `specs` is healthy and ZooKeeper (if among them) has exactly
/// one leader. Returns the names still unhealthy at the deadline.
pub(crate) async fn wait_healthy(
    topo: &Topology,
    specs: &[&'static ServerSpec],
    timeout: Duration,
) -> Result<(), Vec<&'static str>> {
    let has_zk = specs.iter().any(|s| s.system == System::Zookeeper);
    let deadline = Instant::now() + timeout;
    loop {
        let probes = probe_all(topo, specs).await;
        let unhealthy: Vec<&'static str> = specs
            .iter()
            .zip(&probes)
            .filter(|(_, p)| !p.healthy)
            .map(|(s, _)| s.name)
            .collect();
        if unhealthy.is_empty() && (!has_zk || zk_leaders(&probes) == 1) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(unhealthy);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How many probes report `Mode: leader`.
pub(crate) fn zk_leaders(probes: &[Probe]) -> usize {
    probes
        .iter()
        .filter(|p| p.role.as_deref() == Some("leader"))
        .count()
}
