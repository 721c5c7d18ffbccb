//! Faults as Docker command lines, without side effects.

use crate::file::{NETWORK, address, container};
use lockbench_chaos::Group;
use lockbench_cluster::{SERVERS, ServerSpec};
use lockbench_core::{Fault, PartitionSpec, Targets};
use rand::Rng;

/// The servers (containers without their `lockbench-` prefix) of a group, as in the managed
/// cluster.
pub fn servers(group: Group) -> Vec<&'static str> {
    SERVERS
        .iter()
        .filter(|s| s.group == group)
        .map(|s| s.name)
        .collect()
}

/// One side effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `docker <args>`.
    Docker(Vec<String>),
}

impl Action {
    /// The action as a shell-like line, for notes and tests.
    pub fn command_line(&self) -> String {
        match self {
            Action::Docker(args) => format!("docker {}", args.join(" ")),
        }
    }
}

/// What a fault does: on which servers, the actions, and the actions that undo it (empty for
/// faults that close a window: resume, start, heal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Resolved server names.
    pub targets: Vec<String>,
    /// Do these now.
    pub actions: Vec<Action>,
    /// Do these to end the window.
    pub undo: Vec<Action>,
}

fn docker(verb: &[&str], servers: &[String]) -> Vec<Action> {
    servers
        .iter()
        .map(|s| {
            let mut args: Vec<String> = verb.iter().map(|v| v.to_string()).collect();
            args.push(container(s));
            Action::Docker(args)
        })
        .collect()
}

/// `docker network connect` with the server's own address (a container reconnected without
/// one would get another, and its peers and clients would not find it).
fn reconnect(servers: &[String]) -> Vec<Action> {
    servers
        .iter()
        .map(|s| {
            let ip = ServerSpec::by_name(s)
                .map(address)
                .expect("targets are servers");
            Action::Docker(vec![
                "network".into(),
                "connect".into(),
                "--ip".into(),
                ip.to_string(),
                NETWORK.into(),
                container(s),
            ])
        })
        .collect()
}

/// Why link faults are not applied in compose mode.
const NO_LINK_PROXY: &str = "compose mode: link faults (link-delay, link-blackhole, clients-off) \
    need a link proxy between the clients and the containers, which compose mode does not run \
    yet: NOT APPLIED";

/// `group`'s servers named by `targets`, chosen by the chaos crate's resolver (as on the
/// managed cluster). Compose mode cannot ask the containers for their leader.
fn resolve(targets: &Targets, group: Group, rng: &mut impl Rng) -> Result<Vec<String>, String> {
    if lockbench_chaos::needs_leader(targets) {
        return Err("compose mode: leader/follower targets need a leader lookup inside the containers, not implemented; name the servers instead".into());
    }
    let all: Vec<String> = servers(group).into_iter().map(String::from).collect();
    lockbench_chaos::choose(targets, &all, &[], None, rng).map_err(|e| format!("compose mode: {e}"))
}

/// Plans `fault` on `group`'s servers. `Err` is the note of a fault that compose mode cannot
/// apply. `heal` plans nothing here: the nemesis undoes its open windows.
pub fn plan(fault: &Fault, group: Group, rng: &mut impl Rng) -> Result<Planned, String> {
    let planned = |targets: Vec<String>, actions, undo| Planned {
        targets,
        actions,
        undo,
    };
    match fault {
        Fault::Heal => Ok(planned(Vec::new(), Vec::new(), Vec::new())),
        Fault::Pause { targets } => {
            let t = resolve(targets, group, rng)?;
            Ok(planned(
                t.clone(),
                docker(&["pause"], &t),
                docker(&["unpause"], &t),
            ))
        }
        Fault::Resume { targets } => {
            let t = resolve(targets, group, rng)?;
            Ok(planned(t.clone(), docker(&["unpause"], &t), Vec::new()))
        }
        Fault::Kill { targets } => {
            let t = resolve(targets, group, rng)?;
            Ok(planned(
                t.clone(),
                docker(&["kill", "--signal", "KILL"], &t),
                docker(&["start"], &t),
            ))
        }
        Fault::Start { targets } => {
            let t = resolve(targets, group, rng)?;
            Ok(planned(t.clone(), docker(&["start"], &t), Vec::new()))
        }
        Fault::Partition { split } => {
            let isolated = match split {
                PartitionSpec::Isolate(targets) => resolve(targets, group, rng)?,
                // Clients stay with the majority: cut the minority off from everyone.
                PartitionSpec::Halves => resolve(&Targets::Minority, group, rng)?,
                PartitionSpec::ClientsOff => return Err(NO_LINK_PROXY.into()),
                other => {
                    return Err(format!(
                        "compose mode: partition {other:?} needs per-pair rules inside the containers; only isolate and halves are implemented"
                    ));
                }
            };
            if isolated.is_empty() {
                return Err("compose mode: a one-server group cannot be split".into());
            }
            Ok(planned(
                isolated.clone(),
                docker(&["network", "disconnect", NETWORK], &isolated),
                reconnect(&isolated),
            ))
        }
        Fault::LinkDelay { .. } | Fault::LinkBlackhole { .. } => Err(NO_LINK_PROXY.into()),
        Fault::ClockJump { .. } => {
            Err("compose mode: the Redis clock-jump emulation is managed-mode only".into())
        }
        Fault::RedisFailover => Err(
            "compose mode: redis-failover is managed-mode only (it cuts the replication link \
             with iptables inside the replica's namespace)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

    fn lines(fault: Fault, group: Group) -> (Vec<String>, Vec<String>) {
        let p = plan(&fault, group, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
        (
            p.actions.iter().map(Action::command_line).collect(),
            p.undo.iter().map(Action::command_line).collect(),
        )
    }

    fn nodes(n: &[&str]) -> Targets {
        Targets::Nodes(n.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn server_verbs_are_docker_commands() {
        let (a, u) = lines(
            Fault::Pause {
                targets: nodes(&["zk2"]),
            },
            Group::Zookeeper,
        );
        assert_eq!(a, ["docker pause lockbench-zk2"]);
        assert_eq!(u, ["docker unpause lockbench-zk2"]);
        let (a, u) = lines(
            Fault::Kill {
                targets: Targets::All,
            },
            Group::Etcd,
        );
        assert_eq!(
            a,
            [
                "docker kill --signal KILL lockbench-etcd1",
                "docker kill --signal KILL lockbench-etcd2",
                "docker kill --signal KILL lockbench-etcd3"
            ]
        );
        assert_eq!(u[0], "docker start lockbench-etcd1");
        let (a, _) = lines(
            Fault::Resume {
                targets: nodes(&["redis"]),
            },
            Group::Redis,
        );
        assert_eq!(a, ["docker unpause lockbench-redis"]);
    }

    #[test]
    fn partitions_disconnect_from_the_network() {
        let (a, u) = lines(
            Fault::Partition {
                split: PartitionSpec::Isolate(nodes(&["redlock3"])),
            },
            Group::Redlock,
        );
        assert_eq!(
            a,
            ["docker network disconnect lockbench lockbench-redlock3"]
        );
        assert_eq!(
            u,
            ["docker network connect --ip 10.78.0.33 lockbench lockbench-redlock3"]
        );
        let (a, _) = lines(
            Fault::Partition {
                split: PartitionSpec::Halves,
            },
            Group::Redlock,
        );
        assert_eq!(a.len(), 2, "a minority of five");
    }

    #[test]
    fn what_compose_cannot_do_is_said() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for f in [
            Fault::Pause {
                targets: Targets::Leader,
            },
            Fault::Partition {
                split: PartitionSpec::MajoritiesRing,
            },
            Fault::ClockJump {
                targets: Targets::One,
                by: Duration::from_secs(5),
            },
            Fault::Kill {
                targets: nodes(&["zk1"]),
            },
            Fault::LinkDelay {
                targets: Targets::All,
                latency: Duration::from_millis(100),
                jitter: Duration::ZERO,
            },
            Fault::LinkBlackhole {
                targets: Targets::All,
            },
            Fault::Partition {
                split: PartitionSpec::ClientsOff,
            },
        ] {
            let err = plan(&f, Group::Redlock, &mut rng).unwrap_err();
            assert!(err.starts_with("compose mode:"), "{err}");
        }
    }
}
