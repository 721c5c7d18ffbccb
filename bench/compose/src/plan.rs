//! Faults as Docker command lines and Toxiproxy REST calls, without side effects.

use lockbench_chaos::Group;
use lockbench_core::{Fault, PartitionSpec, Targets};
use rand::Rng;
use rand::seq::IndexedRandom;
use std::time::Duration;

/// The Docker network of docker-compose.yml (`networks.lockbench.name`).
pub const NETWORK: &str = "lockbench";
/// Where Toxiproxy's REST API is published.
pub const TOXIPROXY_API: &str = "127.0.0.1:8474";

/// The container of a server (`zk1` -> `lockbench-zk1`).
pub fn container(server: &str) -> String {
    format!("lockbench-{server}")
}

/// The servers (and Toxiproxy proxies) of a group.
pub fn servers(group: Group) -> &'static [&'static str] {
    match group {
        Group::Zookeeper => &["zk1", "zk2", "zk3"],
        Group::Etcd => &["etcd1", "etcd2", "etcd3"],
        Group::Redis => &["redis"],
        Group::Redlock => &["redlock1", "redlock2", "redlock3", "redlock4", "redlock5"],
        Group::Failover => &["redis-primary", "redis-replica"],
        Group::Sentinel => &["sentinel1", "sentinel2", "sentinel3"],
    }
}

/// One side effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `docker <args>`.
    Docker(Vec<String>),
    /// An HTTP request to Toxiproxy's API.
    Toxiproxy {
        /// `POST` or `DELETE`.
        method: &'static str,
        /// e.g. `/proxies/zk1/toxics`.
        path: String,
        /// JSON body.
        body: Option<String>,
    },
}

impl Action {
    /// The action as a shell-like line, for notes and tests.
    pub fn command_line(&self) -> String {
        match self {
            Action::Docker(args) => format!("docker {}", args.join(" ")),
            Action::Toxiproxy { method, path, body } => match body {
                Some(b) => format!("{method} http://{TOXIPROXY_API}{path} {b}"),
                None => format!("{method} http://{TOXIPROXY_API}{path}"),
            },
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

fn proxy_enabled(servers: &[String], enabled: bool) -> Vec<Action> {
    servers
        .iter()
        .map(|s| Action::Toxiproxy {
            method: "POST",
            path: format!("/proxies/{s}"),
            body: Some(format!("{{\"enabled\":{enabled}}}")),
        })
        .collect()
}

fn toxic(
    servers: &[String],
    name: &str,
    kind: &str,
    attributes: String,
) -> (Vec<Action>, Vec<Action>) {
    let add = servers
        .iter()
        .map(|s| Action::Toxiproxy {
            method: "POST",
            path: format!("/proxies/{s}/toxics"),
            body: Some(format!(
                "{{\"name\":\"{name}\",\"type\":\"{kind}\",\"stream\":\"downstream\",\"toxicity\":1.0,\"attributes\":{attributes}}}"
            )),
        })
        .collect();
    let remove = servers
        .iter()
        .map(|s| Action::Toxiproxy {
            method: "DELETE",
            path: format!("/proxies/{s}/toxics/{name}"),
            body: None,
        })
        .collect();
    (add, remove)
}

fn resolve(targets: &Targets, group: Group, rng: &mut impl Rng) -> Result<Vec<String>, String> {
    let all = servers(group);
    let n = all.len();
    let pick = |k: usize, rng: &mut dyn rand::RngCore| {
        let mut v: Vec<String> = all.choose_multiple(rng, k).map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    Ok(match targets {
        Targets::One => pick(1, rng),
        Targets::Minority => pick(n.saturating_sub(1) / 2, rng),
        Targets::Majority => pick(n / 2 + 1, rng),
        Targets::All => all.iter().map(|s| s.to_string()).collect(),
        Targets::Nodes(names) => {
            let ours: Vec<String> = names
                .iter()
                .filter(|x| all.contains(&x.as_str()))
                .cloned()
                .collect();
            if ours.is_empty() {
                return Err(format!(
                    "compose mode: none of {names:?} is a server of this backend ({all:?})"
                ));
            }
            ours
        }
        Targets::Leader | Targets::Followers => {
            return Err("compose mode: leader/follower targets need a leader lookup inside the containers, not implemented; name the servers instead".into());
        }
        Targets::Holder => {
            return Err("compose mode: client faults are the client nemesis's".into());
        }
    })
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
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
                PartitionSpec::ClientsOff => {
                    let t: Vec<String> = servers(group).iter().map(|s| s.to_string()).collect();
                    return Ok(planned(
                        t.clone(),
                        proxy_enabled(&t, false),
                        proxy_enabled(&t, true),
                    ));
                }
                other => {
                    return Err(format!(
                        "compose mode: partition {other:?} needs per-pair rules inside the containers; only isolate, halves and clients-off are implemented"
                    ));
                }
            };
            if isolated.is_empty() {
                return Err("compose mode: a one-server group cannot be split".into());
            }
            Ok(planned(
                isolated.clone(),
                docker(&["network", "disconnect", NETWORK], &isolated),
                docker(&["network", "connect", NETWORK], &isolated),
            ))
        }
        Fault::LinkDelay {
            targets,
            latency,
            jitter,
        } => {
            let t = resolve(targets, group, rng)?;
            let attrs = format!(
                "{{\"latency\":{},\"jitter\":{}}}",
                ms(*latency),
                ms(*jitter)
            );
            let (add, remove) = toxic(&t, "lockbench-delay", "latency", attrs);
            Ok(planned(t, add, remove))
        }
        Fault::LinkBlackhole { targets } => {
            let t = resolve(targets, group, rng)?;
            let (add, remove) = toxic(
                &t,
                "lockbench-blackhole",
                "timeout",
                "{\"timeout\":0}".into(),
            );
            Ok(planned(t, add, remove))
        }
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
        assert_eq!(u, ["docker network connect lockbench lockbench-redlock3"]);
        let (a, _) = lines(
            Fault::Partition {
                split: PartitionSpec::Halves,
            },
            Group::Redlock,
        );
        assert_eq!(a.len(), 2, "a minority of five");
        let (a, u) = lines(
            Fault::Partition {
                split: PartitionSpec::ClientsOff,
            },
            Group::Redis,
        );
        assert_eq!(
            a,
            ["POST http://127.0.0.1:8474/proxies/redis {\"enabled\":false}"]
        );
        assert_eq!(
            u,
            ["POST http://127.0.0.1:8474/proxies/redis {\"enabled\":true}"]
        );
    }

    #[test]
    fn link_faults_are_toxics() {
        let (a, u) = lines(
            Fault::LinkDelay {
                targets: nodes(&["etcd1"]),
                latency: Duration::from_millis(200),
                jitter: Duration::from_millis(20),
            },
            Group::Etcd,
        );
        assert_eq!(
            a,
            [
                "POST http://127.0.0.1:8474/proxies/etcd1/toxics {\"name\":\"lockbench-delay\",\"type\":\"latency\",\"stream\":\"downstream\",\"toxicity\":1.0,\"attributes\":{\"latency\":200,\"jitter\":20}}"
            ]
        );
        assert_eq!(
            u,
            ["DELETE http://127.0.0.1:8474/proxies/etcd1/toxics/lockbench-delay"]
        );
        let (a, _) = lines(
            Fault::LinkBlackhole {
                targets: nodes(&["zk1"]),
            },
            Group::Zookeeper,
        );
        assert!(a[0].contains("\"type\":\"timeout\"") && a[0].contains("{\"timeout\":0}"));
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
        ] {
            let err = plan(&f, Group::Redlock, &mut rng).unwrap_err();
            assert!(err.starts_with("compose mode:"), "{err}");
        }
    }
}
