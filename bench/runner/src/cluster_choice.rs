//! Which servers a run uses, as one value: the managed cluster (started from the OS packages
//! if needed), docker-compose.yml's cluster, or an external one described by a file.
//!
//! Why one value: what a run can do to its servers follows from this choice alone, so the
//! choice hands out the server nemesis ([`ClusterChoice::server_nemesis`]): the chaos crate's
//! on the managed cluster (namespaces, iptables, signals, restarts), the same one on compose's
//! containers (their namespaces, Docker's pause/kill/start), and on an external cluster
//! [`Unreachable`], which reports every server fault as not applied; and the link nemesis over the
//! run's own proxies ([`ClusterChoice::link_nemesis`]) on both clusters lockbench reaches. Before,
//! three `match`es in the coordinator each spawned their own copy of the fault schedule.

use anyhow::Context;
use lockbench_chaos::{LinkNemesis, LinkProxies, Nemesis, Reach, ServerNemesis, Unreachable};
use lockbench_cluster::Cluster;

use lockbench_core::{BackendKind, Endpoints, Fault, FaultEvent, RunClock, Seed, Stream};
use lockbench_workloads::threads::ServersOn;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long `--cluster compose` waits for the compose cluster to be healthy (a cold
/// ZooKeeper ensemble takes ~10 s; a loaded 2-core machine several times that).
const COMPOSE_HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// The servers a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterChoice {
    /// The managed cluster in this state directory.
    Managed(PathBuf),
    /// docker-compose.yml's cluster (endpoints built in, faults through Docker).
    Compose,
    /// Servers listed in this TOML file; lockbench cannot reach their machines.
    External(PathBuf),
}

impl ClusterChoice {
    /// Parses `--cluster`: `managed`, `compose` or `external:FILE`.
    pub fn parse(spec: &str, state_dir: PathBuf) -> anyhow::Result<ClusterChoice> {
        match spec {
            "managed" => Ok(ClusterChoice::Managed(state_dir)),
            "compose" => Ok(ClusterChoice::Compose),
            _ => match spec.strip_prefix("external:") {
                Some(file) => Ok(ClusterChoice::External(PathBuf::from(file))),
                None => anyhow::bail!(
                    "--cluster {spec}: expected `managed`, `compose` or `external:FILE`"
                ),
            },
        }
    }

    /// The label stored in `results.json` (`cluster`): the `--cluster` value.
    pub fn label(&self) -> String {
        match self {
            ClusterChoice::Managed(_) => "managed".into(),
            ClusterChoice::Compose => "compose".into(),
            ClusterChoice::External(file) => format!("external:{}", file.display()),
        }
    }

    /// Where its servers run: the managed cluster and compose's containers on this machine; an
    /// external cluster's are taken to be elsewhere.
    pub fn servers_on(&self) -> ServersOn {
        match self {
            ClusterChoice::Managed(_) | ClusterChoice::Compose => ServersOn::ThisHost,
            ClusterChoice::External(_) => ServersOn::OtherHosts,
        }
    }

    /// The managed cluster's state directory (`None` for compose and external clusters).
    pub fn managed_state(&self) -> Option<&Path> {
        match self {
            ClusterChoice::Managed(dir) => Some(dir),
            ClusterChoice::Compose | ClusterChoice::External(_) => None,
        }
    }

    /// The servers' endpoints, starting the managed cluster if needed; the managed cluster is
    /// returned too when this call started it (so whoever started it stops it). On compose
    /// it waits for the servers of the systems `backends` use, not for the others: a run of
    /// Redis recipes does not wait for PostgreSQL's replica.
    pub async fn endpoints(
        &self,
        backends: &[BackendKind],
    ) -> anyhow::Result<(Endpoints, Option<Cluster>)> {
        match self {
            // Only the servers of the systems `backends` use: a run of Redis recipes from a
            // stopped cluster does not wait for three ZooKeeper JVMs.
            ClusterChoice::Managed(dir) => {
                let mut groups: Vec<lockbench_core::Group> = Vec::new();
                for server in servers_of(backends) {
                    if !groups.contains(&server.group) {
                        groups.push(server.group);
                    }
                }
                let mut cluster = Cluster::new(dir.clone());
                if !groups.is_empty() {
                    cluster = cluster.with_groups(&groups);
                }
                eprintln!(
                    "lockbench: checking the managed cluster's {} servers (starting them if needed)",
                    systems_of(backends).join(", ")
                );
                let report = cluster
                    .up()
                    .await
                    .context("the managed cluster did not come up (see `lockbench status`)")?;
                let endpoints = report.status.endpoints.clone();
                Ok((endpoints, report.started.then_some(cluster)))
            }
            // docker-compose.yml's servers at their container addresses (compose/endpoints.toml)
            // when this host routes to them, else at their published ports on 127.0.0.1 (said
            // on the first line), once every one is healthy.
            ClusterChoice::Compose => {
                lockbench_compose::ensure_runs()?;
                let route = lockbench_compose::route();
                eprintln!("lockbench: {}", route.describe());
                if !route.is_published() {
                    eprintln!("lockbench: {}", lockbench_compose::access().describe());
                }
                lockbench_compose::wait_healthy(COMPOSE_HEALTH_TIMEOUT, &servers_of(backends))
                    .await?;
                // Secured (compose/secure.yml): TLS and lockbench's users, set up first.
                lockbench_compose::secure::set_up_users().await?;
                Ok((lockbench_compose::secure::endpoints()?, None))
            }
            ClusterChoice::External(file) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read cluster file {}", file.display()))?;
                let mut endpoints = Endpoints::from_toml(&text)
                    .and_then(|e| lockbench_registry::check_endpoints(&e).map(|()| e))
                    .map_err(|e| anyhow::anyhow!("cluster file {}: {e}", file.display()))?;
                // TLS files and password files are relative to the cluster file.
                let dir = file.parent().unwrap_or(Path::new("."));
                let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
                endpoints.resolve_paths(&dir);
                Ok((endpoints, None))
            }
        }
    }

    /// The nemesis for `kind`'s servers on this cluster; its target choices draw from `seed`
    /// (the same choices on both clusters).
    pub fn server_nemesis(&self, kind: BackendKind, seed: u64) -> ServerSide {
        let group = lockbench_registry::group_of(kind);
        let rng = Seed(seed).rng(Stream::ServerTargets);
        match self {
            // The chaos crate's server nemesis: partitions in the namespaces, pause,
            // kill/start, clock jump, Redis failover.
            ClusterChoice::Managed(dir) => {
                ServerSide::Managed(ServerNemesis::new(Cluster::new(dir.clone()), group, rng))
            }
            // The same nemesis on the containers (their namespaces; Docker pause/kill/start).
            // Through the published ports: no container address or namespace is reachable.
            ClusterChoice::Compose if lockbench_compose::route().is_published() => {
                ServerSide::External(Unreachable::because(
                    lockbench_compose::route::faults_not_applied(),
                ))
            }
            ClusterChoice::Compose => ServerSide::Compose(lockbench_compose::nemesis(group, rng)),
            // Its machines are someone else's: every server fault is reported not applied.
            ClusterChoice::External(_) => ServerSide::External(Unreachable::external()),
        }
    }

    /// The nemesis of the run's link proxies to `kind`'s servers (managed and compose
    /// clusters: an external cluster's run has no proxies of its own).
    pub fn link_nemesis(
        &self,
        proxies: Arc<LinkProxies>,
        kind: BackendKind,
        seed: u64,
    ) -> Option<LinkNemesis> {
        let group = lockbench_registry::group_of(kind);
        let rng = Seed(seed).rng(Stream::LinkTargets);
        match self {
            ClusterChoice::Managed(dir) => Some(LinkNemesis::new(
                proxies,
                &Cluster::new(dir.to_path_buf()),
                group,
                rng,
            )),
            ClusterChoice::Compose if lockbench_compose::route().is_published() => None,
            ClusterChoice::Compose => {
                let site = lockbench_compose::Containers::new();
                let servers = site.servers(group);
                Some(LinkNemesis::on(proxies, site, servers, rng))
            }
            ClusterChoice::External(_) => None,
        }
    }

    /// The servers of `kind` a run's link proxies stand in front of: (name, endpoint as the
    /// clients write it); `None` on an external cluster and on compose through its published
    /// ports (their link faults are then recorded as not applied).
    pub fn proxied_servers(&self, kind: BackendKind) -> Option<Vec<(String, String)>> {
        let group = lockbench_registry::group_of(kind);
        let (topo, servers) = match self {
            ClusterChoice::Compose if lockbench_compose::route().is_published() => return None,
            ClusterChoice::Managed(dir) => {
                let site = lockbench_chaos::Managed::new(Cluster::new(dir.clone()));
                (site.topology().clone(), site.servers(group))
            }
            ClusterChoice::Compose => {
                let site = lockbench_compose::Containers::new();
                (site.topology().clone(), site.servers(group))
            }
            ClusterChoice::External(_) => return None,
        };
        Some(
            servers
                .into_iter()
                .map(|s| (s.name.to_string(), topo.endpoint(s)))
                .collect(),
        )
    }
}

/// The server nemesis a [`ClusterChoice`] hands out.
pub enum ServerSide {
    /// The managed cluster's.
    Managed(ServerNemesis),
    /// docker-compose.yml's.
    Compose(lockbench_compose::ComposeNemesis),
    /// An external cluster's, or compose's through its published ports: nothing on its
    /// machines can be done (every server fault is recorded as not applied, with the reason).
    External(Unreachable),
}

impl ServerSide {
    /// Adds the client hosts of workers in containers of their own (Swarm tasks on a bridge
    /// network), so partitions of them apply inside their namespaces; an external cluster's
    /// nemesis applies nothing and ignores them.
    pub fn add_client_hosts(&mut self, hosts: Vec<lockbench_cluster::Host>) {
        match self {
            ServerSide::Managed(n) => n.add_client_hosts(hosts),
            ServerSide::Compose(n) => n.add_client_hosts(hosts),
            ServerSide::External(_) => {}
        }
    }
}

impl Nemesis for ServerSide {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match self {
            ServerSide::Managed(n) => n.apply(fault, clock).await,
            ServerSide::Compose(n) => n.apply(fault, clock).await,
            ServerSide::External(n) => n.apply(fault, clock).await,
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        match self {
            ServerSide::Managed(n) => n.heal_all(clock).await,
            ServerSide::Compose(n) => n.heal_all(clock).await,
            ServerSide::External(n) => n.heal_all(clock).await,
        }
    }
}

/// The names of the systems whose servers `backends` use, in the cluster's order.
fn systems_of(backends: &[BackendKind]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for server in servers_of(backends) {
        if !names.contains(&server.system.name()) {
            names.push(server.system.name());
        }
    }
    names
}

/// Every server of the systems `backends` use: each backend's group, the group whose list its
/// clients read (the Sentinels, for the failover pair they name), and the rest of those
/// groups' systems.
fn servers_of(backends: &[BackendKind]) -> Vec<&'static lockbench_cluster::ServerSpec> {
    let groups: Vec<_> = backends
        .iter()
        .map(|&b| lockbench_registry::group_of(b))
        .collect();
    let used = |g: lockbench_core::Group| groups.iter().any(|&u| u == g || u.list() == g.name());
    let systems: Vec<&str> = lockbench_cluster::SERVERS
        .iter()
        .filter(|s| used(s.group))
        .map(|s| s.system.name())
        .collect();
    lockbench_cluster::SERVERS
        .iter()
        .filter(|s| systems.contains(&s.system.name()))
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compose run waits for its systems' servers only: a Redis recipe for every Redis
    /// server, the Sentinel recipe for the Sentinels too, none of them for ZooKeeper or
    /// PostgreSQL.
    #[test]
    fn a_run_waits_for_the_servers_of_the_systems_it_uses() {
        let names = |backends: &[&str]| -> Vec<&str> {
            let kinds: Vec<BackendKind> = backends
                .iter()
                .map(|b| lockbench_registry::parse_backend(b).unwrap())
                .collect();
            servers_of(&kinds).iter().map(|s| s.name).collect()
        };
        let redis = names(&["redis-setnx"]);
        assert!(
            redis.contains(&"redis") && redis.contains(&"redlock5"),
            "{redis:?}"
        );
        assert!(!redis.iter().any(|n| n.starts_with("sen")), "{redis:?}");
        let sentinel = names(&["redis-sentinel"]);
        assert!(
            sentinel.contains(&"fo1") && sentinel.contains(&"sen3"),
            "{sentinel:?}"
        );
        assert!(
            !redis
                .iter()
                .any(|n| n.starts_with("zk") || n.starts_with("pg")),
            "{redis:?}"
        );
        let both = names(&["zk-fair", "pg-advisory"]);
        assert!(both.contains(&"zk1") && both.contains(&"pg2"), "{both:?}");
        assert!(!both.contains(&"redis"), "{both:?}");
        assert!(names(&[]).is_empty());
    }
}
