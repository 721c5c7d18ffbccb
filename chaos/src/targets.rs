//! Resolving [`Targets`] against the backend's servers at the moment a fault starts: the
//! leader is asked for (ZooKeeper `srvr`, etcd's maintenance status), seeded choices draw from
//! the nemesis's RNG, and the result is a list of host names in server order.

use crate::probe;
use anyhow::{anyhow, bail};
use lockbench_cluster::{Group, ServerSpec, Topology};
use lockbench_core::Targets;
use rand::RngCore;
use rand::seq::SliceRandom;

/// The current leader among `servers`: ZooKeeper's member in `Mode: leader`, etcd's member
/// whose id is the leader id, the standalone Redis server (it is the primary). Errors for
/// Redlock (independent servers have no leader) and when no single leader answers.
pub async fn leader(topo: &Topology, servers: &[&'static ServerSpec]) -> anyhow::Result<String> {
    let group = servers
        .first()
        .map(|s| s.group)
        .ok_or_else(|| anyhow!("no servers"))?;
    let mut leaders = Vec::new();
    match group {
        Group::Zookeeper => {
            for s in servers {
                if probe::zk_mode(topo, s).await.ok().flatten().as_deref() == Some("leader") {
                    leaders.push(s.name);
                }
            }
        }
        Group::Etcd => {
            for s in servers {
                if probe::etcd_is_leader(topo, s).await.unwrap_or(false) {
                    leaders.push(s.name);
                }
            }
        }
        Group::Redis if servers.len() == 1 => leaders.push(servers[0].name),
        Group::Failover => return crate::failover::primary(topo, servers).await,
        Group::Sentinel => bail!("Sentinels have no leader (the failover pair has a primary)"),
        Group::Redis | Group::Redlock => {
            bail!("independent Redis servers have no leader")
        }
    }
    match leaders.as_slice() {
        [one] => Ok(one.to_string()),
        [] => bail!("no member reports being the leader (election in progress, or paused?)"),
        many => bail!(
            "several members report being the leader: {}",
            many.join(", ")
        ),
    }
}

/// Resolves `targets` to server (or client host) names. `clients` are the client hosts that
/// exist, for `Nodes` naming them.
pub async fn resolve(
    targets: &Targets,
    topo: &Topology,
    servers: &[&'static ServerSpec],
    clients: &[String],
    rng: &mut (dyn RngCore + Send),
) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = servers.iter().map(|s| s.name.to_string()).collect();
    let n = names.len();
    let pick = |k: usize, rng: &mut (dyn RngCore + Send)| {
        let mut v = names.clone();
        v.shuffle(rng);
        v.truncate(k);
        v
    };
    let chosen = match targets {
        Targets::One => pick(1, rng),
        Targets::Leader => vec![leader(topo, servers).await?],
        Targets::Followers => {
            let l = leader(topo, servers).await?;
            names.iter().filter(|n| **n != l).cloned().collect()
        }
        Targets::Minority => pick(n.saturating_sub(1) / 2, rng),
        Targets::Majority => pick(n / 2 + 1, rng),
        Targets::All => names.clone(),
        Targets::Holder => bail!(
            "`holder` is a client process: client faults are applied by the coordinator to its \
             worker processes, not by the server nemesis"
        ),
        Targets::Nodes(list) => {
            for name in list {
                if !names.contains(name) && !clients.contains(name) {
                    bail!(
                        "no server or client host named {name} (servers: {}; client hosts: {})",
                        names.join(", "),
                        if clients.is_empty() {
                            "none".into()
                        } else {
                            clients.join(", ")
                        }
                    );
                }
            }
            list.clone()
        }
    };
    Ok(in_order(chosen, &names))
}

/// Servers in server order, then anything else (client hosts) in the given order.
fn in_order(mut chosen: Vec<String>, servers: &[String]) -> Vec<String> {
    chosen.sort_by_key(|c| servers.iter().position(|s| s == c).unwrap_or(usize::MAX));
    chosen.dedup();
    chosen
}
