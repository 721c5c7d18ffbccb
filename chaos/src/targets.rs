//! Resolving [`Targets`] against the backend's servers at the moment a fault starts: the
//! leader is asked for (the system's [`Leadership`] rule and leader probe, asked from inside
//! each server's host: ZooKeeper `srvr`, etcd's maintenance status, or on a secure cluster
//! its `etcd_server_is_leader` metric over TLS: [`crate::probe`]), seeded choices draw from
//! the nemesis's RNG, and the result is a list of host names in server order.

use crate::{Reach, probe};
use anyhow::{anyhow, bail};
use lockbench_cluster::ServerSpec;
use lockbench_core::Leadership;
use lockbench_core::Targets;
use rand::RngCore;
use rand::seq::SliceRandom;

/// The current leader among `servers` (one group), by its system's
/// [`leadership`](lockbench_core::System::leadership): ZooKeeper's member in `Mode: leader`,
/// etcd's member whose id is the leader id, the standalone Redis server (it is the primary),
/// the failover pair's primary as its system asks its Sentinels
/// ([`System::watched_leader`](lockbench_core::System::watched_leader)). Errors for Redlock
/// (independent servers have no leader) and when no single leader answers.
pub async fn leader(reach: &dyn Reach, servers: &[&'static ServerSpec]) -> anyhow::Result<String> {
    let first = servers.first().ok_or_else(|| anyhow!("no servers"))?;
    let mut leaders = Vec::new();
    match first.system.leadership(first.group) {
        Leadership::Elected => {
            for s in servers {
                let Some(check) = s.system.leader_check(&probe::endpoint(reach, s)?) else {
                    continue;
                };
                let reply = probe::exchange(reach, s, check.request, check.complete).await;
                if reply.is_ok_and(|r| s.system.is_leader(&r)) {
                    leaders.push(s.name);
                }
            }
        }
        Leadership::Sole if servers.len() == 1 => leaders.push(first.name),
        Leadership::Sole => bail!(
            "{} has {} servers and no leader",
            first.group.name(),
            servers.len()
        ),
        Leadership::Watched => {
            let access = probe::Probes(reach);
            let Some(asked) = first.system.watched_leader(servers, &access) else {
                bail!(
                    "{} names no watcher of {}",
                    first.system.name(),
                    first.group.name()
                );
            };
            return asked.await.map_err(|e| anyhow!(e));
        }
        Leadership::None(why) => bail!("{why}"),
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

/// Resolves `targets` to server (or client host) names on the managed cluster: the leader is
/// looked up only when `targets` needs it, then [`choose`] decides.
pub async fn resolve(
    targets: &Targets,
    reach: &dyn Reach,
    servers: &[&'static ServerSpec],
    clients: &[String],
    rng: &mut (dyn RngCore + Send),
) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = servers.iter().map(|s| s.name.to_string()).collect();
    let leader = if needs_leader(targets) {
        Some(leader(reach, servers).await?)
    } else {
        None
    };
    choose(targets, &names, clients, leader.as_deref(), rng).map_err(|e| anyhow!(e))
}

/// Whether choosing `targets` needs to know the current leader.
pub fn needs_leader(targets: &Targets) -> bool {
    matches!(targets, Targets::Leader | Targets::Followers)
}

/// The one target resolver (managed chaos, compose and the runner's stand-in nemesis all use
/// it): chooses what `targets` names among `servers` (names in server order). `clients` are
/// the client hosts that exist (`Nodes` may name them); `leader` is the current leader, when
/// known ([`needs_leader`]). Seeded choices shuffle the servers with `rng` and take the first
/// `k`; the result is in server order, then client hosts in the order given.
pub fn choose<R: RngCore + ?Sized>(
    targets: &Targets,
    servers: &[String],
    clients: &[String],
    leader: Option<&str>,
    rng: &mut R,
) -> Result<Vec<String>, String> {
    let n = servers.len();
    let mut pick = |k: usize| {
        let mut v = servers.to_vec();
        v.shuffle(rng);
        v.truncate(k);
        v
    };
    let known_leader = || {
        leader
            .filter(|l| servers.iter().any(|s| s == l))
            .ok_or_else(|| format!("{targets:?} needs the leader, and none is known"))
    };
    let chosen = match targets {
        Targets::One => pick(1),
        Targets::Minority => pick(n.saturating_sub(1) / 2),
        Targets::Majority => pick(n / 2 + 1),
        Targets::All => servers.to_vec(),
        Targets::Leader => vec![known_leader()?.to_string()],
        Targets::Followers => {
            let l = known_leader()?;
            servers.iter().filter(|s| *s != l).cloned().collect()
        }
        Targets::Holder => {
            return Err(
                "`holder` is a client process: client faults are applied by the coordinator to \
                 its worker processes, not by the server nemesis"
                    .into(),
            );
        }
        Targets::Nodes(list) => {
            for name in list {
                if !servers.contains(name) && !clients.contains(name) {
                    return Err(format!(
                        "no server or client host named {name} (servers: {}; client hosts: {})",
                        servers.join(", "),
                        if clients.is_empty() {
                            "none".into()
                        } else {
                            clients.join(", ")
                        }
                    ));
                }
            }
            list.clone()
        }
    };
    Ok(in_order(chosen, servers))
}

/// Servers in server order, then anything else (client hosts) in the given order.
fn in_order(mut chosen: Vec<String>, servers: &[String]) -> Vec<String> {
    chosen.sort_by_key(|c| servers.iter().position(|s| s == c).unwrap_or(usize::MAX));
    chosen.dedup();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sizes_and_order() {
        let five = names(&["r1", "r2", "r3", "r4", "r5"]);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let c = |t: &Targets, rng: &mut rand_chacha::ChaCha8Rng| {
            choose(t, &five, &[], Some("r4"), rng).unwrap()
        };
        assert_eq!(c(&Targets::One, &mut rng).len(), 1);
        let minority = c(&Targets::Minority, &mut rng);
        assert_eq!(minority.len(), 2);
        let majority = c(&Targets::Majority, &mut rng);
        assert_eq!(majority.len(), 3);
        for v in [&minority, &majority] {
            let mut sorted = v.clone();
            sorted.sort();
            assert_eq!(*v, sorted, "server order");
        }
        assert_eq!(c(&Targets::Leader, &mut rng), names(&["r4"]));
        assert_eq!(
            c(&Targets::Followers, &mut rng),
            names(&["r1", "r2", "r3", "r5"])
        );
        assert_eq!(c(&Targets::All, &mut rng), five);
    }

    /// An empty group has no minority (and never underflows), a leader target without a known
    /// leader is an error, and unknown names are refused.
    #[test]
    fn edges_are_errors_or_empty() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert_eq!(
            choose(&Targets::Minority, &[], &[], None, &mut rng),
            Ok(vec![])
        );
        let three = names(&["a", "b", "c"]);
        assert!(choose(&Targets::Leader, &three, &[], None, &mut rng).is_err());
        assert!(choose(&Targets::Followers, &three, &[], Some("x"), &mut rng).is_err());
        assert!(choose(&Targets::Holder, &three, &[], None, &mut rng).is_err());
        let nodes = Targets::Nodes(names(&["client1", "b"]));
        assert!(choose(&nodes, &three, &[], None, &mut rng).is_err());
        let clients = names(&["client1"]);
        assert_eq!(
            choose(&nodes, &three, &clients, None, &mut rng),
            Ok(names(&["b", "client1"]))
        );
    }

    /// The same seed chooses the same servers.
    #[test]
    fn the_same_seed_chooses_the_same() {
        let five = names(&["r1", "r2", "r3", "r4", "r5"]);
        let draw = |seed| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            (0..8)
                .map(|_| choose(&Targets::Minority, &five, &[], None, &mut rng).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(9), draw(9));
        assert_ne!(draw(9), draw(10));
    }
}
