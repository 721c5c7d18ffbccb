//! The Docker flow: the `compose` cluster profile and the faults that fit it.
//!
//! `docker-compose.yml` at the repository top runs the same servers as the managed cluster in
//! containers; this crate is everything lockbench knows about it. Why it has this shape:
//!
//! - **The profile is a file, compiled in.** [`endpoints`] parses `compose/endpoints.toml`
//!   (`include_str!`), the same format as an external cluster file, so `lockbench run
//!   --cluster compose` and `LOCKBENCH_CLUSTER=compose cargo bench` need no configuration, and
//!   a test checks the file against `docker-compose.yml`'s published ports.
//! - **Clients go through Toxiproxy.** Every endpoint is a Toxiproxy listener named like its
//!   server (`compose/toxiproxy.json`), so link faults are toxics on one proxy, while servers
//!   talk to each other directly and server faults are Docker verbs on fixed container names
//!   (`lockbench-<server>`).
//! - **Faults are data first.** [`plan`] turns a [`Fault`](lockbench_core::Fault) into [`Action`]s (a `docker`
//!   command line or a Toxiproxy REST call) without side effects, and is unit-tested as
//!   command lines: CI has no Docker engine. [`ComposeNemesis`] executes a plan and reports
//!   it like every nemesis: a fault it cannot express here (leader targets, partition shapes
//!   other than isolating servers, clock jumps) is an event with `applied = false` and a
//!   note, never skipped silently.
//!
//! | verb | compose mode |
//! |---|---|
//! | `pause` / `resume` | `docker pause` / `docker unpause lockbench-<server>` |
//! | `kill` / `start` | `docker kill --signal KILL` / `docker start` |
//! | `partition` (isolate, halves) | `docker network disconnect lockbench lockbench-<server>`; `heal` reconnects |
//! | `partition` (clients-off) | Toxiproxy: disable the group's proxies; `heal` enables them |
//! | `link-delay` | Toxiproxy `latency` toxic (downstream) on the targets' proxies |
//! | `link-blackhole` | Toxiproxy `timeout` toxic with `timeout = 0` (data dropped, connection kept) |
//! | `clock-jump`, leader/followers targets, other partition shapes | `applied = false` |
#![deny(missing_docs)]

mod nemesis;
mod plan;

pub use nemesis::ComposeNemesis;
pub use plan::{Action, NETWORK, TOXIPROXY_API, container, plan, servers};

use lockbench_core::Endpoints;

/// `compose/endpoints.toml`, as compiled in.
pub const ENDPOINTS_TOML: &str = include_str!("../../../compose/endpoints.toml");

/// The endpoints of the `docker-compose.yml` cluster (through Toxiproxy, on 127.0.0.1).
pub fn endpoints() -> Endpoints {
    Endpoints::from_toml(ENDPOINTS_TOML).expect("compose/endpoints.toml is valid")
}

#[cfg(test)]
mod tests {
    /// Every endpoint port is published by docker-compose.yml and proxied to a server.
    #[test]
    fn profile_matches_the_compose_file_and_the_proxies() {
        let compose = include_str!("../../../docker-compose.yml");
        let proxies: serde_json::Value =
            serde_json::from_str(include_str!("../../../compose/toxiproxy.json")).unwrap();
        let e = super::endpoints();
        assert_eq!(
            (
                e.zookeeper.len(),
                e.etcd.len(),
                e.redis.len(),
                e.redlock.len()
            ),
            (3, 3, 1, 5)
        );
        let all = e
            .zookeeper
            .iter()
            .chain(&e.etcd)
            .chain(&e.redis)
            .chain(&e.redlock);
        for ep in all {
            let port: u16 = ep.rsplit(':').next().unwrap().parse().unwrap();
            let published = compose.contains(&format!("\"{port}:{port}\""))
                || compose.lines().any(|l| {
                    l.trim_start().starts_with("- \"") && {
                        let range = l.split('"').nth(1).unwrap().split(':').next().unwrap();
                        match range.split_once('-') {
                            Some((a, b)) => {
                                (a.parse().unwrap()..=b.parse().unwrap()).contains(&port)
                            }
                            None => range.parse::<u16>() == Ok(port),
                        }
                    }
                });
            assert!(published, "{ep}: port not published by docker-compose.yml");
            let proxy = proxies
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["listen"] == format!("0.0.0.0:{port}"))
                .unwrap_or_else(|| panic!("{ep}: no Toxiproxy proxy listens on {port}"));
            let name = proxy["name"].as_str().unwrap();
            assert!(compose.contains(&format!("container_name: {}", super::container(name))));
        }
    }
}
