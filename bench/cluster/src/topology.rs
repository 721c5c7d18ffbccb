//! Where the servers run: all on loopback (fixed ports), or each in its own network namespace
//! ("host") on a bridge, with its own address and the systems' standard ports.
//!
//! The choice is made on every `up`: `LOCKBENCH_TOPOLOGY=loopback|netns` if set, else `netns`
//! when this process is root and a namespace can actually be created (probed), else `loopback`.
//! What runs is recorded in `<state>/topology.json` when `up` starts, so `status` and `down`
//! (and a later `up`, which restarts a cluster whose topology differs from the wanted one)
//! always work on what really runs, whatever the environment says now.

use crate::hosts::{self, NetConfig};
use anyhow::{Context, bail};
use lockbench_core::ServerSpec;
use lockbench_core::launch::Layout;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

/// How the managed cluster is laid out on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Topology {
    /// Every server on 127.0.0.1 with its own fixed port (12181..., 12379..., 16379...).
    /// Partitions are impossible here (there is no per-server firewall).
    Loopback,
    /// Every server in its own network namespace on the project's bridge, listening on its
    /// host's address with the standard ports (2181/2888/3888, 2379/2380, 6379).
    Netns(NetConfig),
}

const RECORD: &str = "topology.json";

impl Topology {
    /// `loopback` or `netns`.
    pub fn kind(&self) -> &'static str {
        match self {
            Topology::Loopback => "loopback",
            Topology::Netns(_) => "netns",
        }
    }

    /// The network configuration, in the `netns` topology.
    pub fn net(&self) -> Option<&NetConfig> {
        match self {
            Topology::Loopback => None,
            Topology::Netns(cfg) => Some(cfg),
        }
    }

    /// The topology `up` should use now: `LOCKBENCH_TOPOLOGY` if set, else `netns` when root
    /// and namespaces work, else `loopback` (with a loud warning that partitions are
    /// unavailable). The network comes from [`NetConfig::from_env`].
    pub fn wanted() -> anyhow::Result<Topology> {
        let forced = std::env::var("LOCKBENCH_TOPOLOGY")
            .ok()
            .filter(|v| !v.is_empty());
        match forced.as_deref() {
            Some("loopback") => Ok(Topology::Loopback),
            Some("netns") => {
                let cfg = NetConfig::from_env()?;
                hosts::probe(&cfg)
                    .context("LOCKBENCH_TOPOLOGY=netns, but network namespaces do not work here")?;
                Ok(Topology::Netns(cfg))
            }
            Some(other) => bail!("LOCKBENCH_TOPOLOGY={other}: expected `loopback` or `netns`"),
            None => {
                let cfg = NetConfig::from_env()?;
                match hosts::probe(&cfg) {
                    Ok(()) => Ok(Topology::Netns(cfg)),
                    Err(e) => {
                        tracing::warn!(
                            "network namespaces unavailable ({e:#}): servers run on loopback; \
                             PARTITIONS ARE UNAVAILABLE (they will be reported as not applied); \
                             pauses and kills still work"
                        );
                        Ok(Topology::Loopback)
                    }
                }
            }
        }
    }

    /// What `<state>/topology.json` says runs (`None` if there is no record: nothing was
    /// started since the record was introduced, or only loopback servers of an older version).
    pub fn recorded(state_dir: &Path) -> Option<Topology> {
        let text = std::fs::read_to_string(state_dir.join(RECORD)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record.
    pub(crate) fn record(&self, state_dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join(RECORD);
        std::fs::write(&path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The IP address a server listens on.
    pub fn ip(&self, spec: &ServerSpec) -> IpAddr {
        match self {
            Topology::Loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Topology::Netns(cfg) => IpAddr::V4(cfg.addr(spec.octet)),
        }
    }

    /// The server's client port in this topology.
    pub fn client_port(&self, spec: &ServerSpec) -> u16 {
        match self {
            Topology::Loopback => spec.client_port,
            Topology::Netns(_) => spec.system.standard_ports()[0],
        }
    }

    /// The server's peer ports (ZooKeeper quorum + election, etcd peer) in this topology.
    pub fn peer_ports(&self, spec: &ServerSpec) -> Vec<u16> {
        match self {
            Topology::Loopback => spec.peer_ports.to_vec(),
            Topology::Netns(_) => spec.system.standard_ports()[1..].to_vec(),
        }
    }

    /// Every port the server listens on (client port first).
    pub fn ports(&self, spec: &ServerSpec) -> Vec<u16> {
        let mut ports = vec![self.client_port(spec)];
        ports.extend(self.peer_ports(spec));
        ports
    }

    /// Where clients reach the server.
    pub fn client_addr(&self, spec: &ServerSpec) -> SocketAddr {
        SocketAddr::new(self.ip(spec), self.client_port(spec))
    }

    /// The address clients use: `host:port`, or a URL for etcd
    /// ([`System::endpoint`](lockbench_core::System::endpoint)).
    pub fn endpoint(&self, spec: &ServerSpec) -> String {
        spec.system.endpoint(self.client_addr(spec))
    }

    /// The namespace a server runs in (`lb-zk1`), in the `netns` topology.
    pub fn netns(&self, spec: &ServerSpec) -> Option<String> {
        self.net().map(|cfg| cfg.netns_name(spec.name))
    }
}

/// The members' addresses as a server's launch reads them.
impl Layout for Topology {
    fn ip(&self, spec: &ServerSpec) -> IpAddr {
        Topology::ip(self, spec)
    }

    fn client_port(&self, spec: &ServerSpec) -> u16 {
        Topology::client_port(self, spec)
    }

    fn peer_ports(&self, spec: &ServerSpec) -> Vec<u16> {
        Topology::peer_ports(self, spec)
    }

    fn endpoint(&self, spec: &ServerSpec) -> String {
        Topology::endpoint(self, spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SERVERS;

    #[test]
    fn endpoints_per_topology() {
        let zk1 = SERVERS[0];
        let etcd2 = SERVERS.iter().find(|s| s.name == "etcd2").unwrap();
        assert_eq!(Topology::Loopback.endpoint(zk1), "127.0.0.1:12181");
        let netns = Topology::Netns(NetConfig::default());
        assert_eq!(netns.endpoint(zk1), "10.77.0.11:2181");
        assert_eq!(netns.endpoint(etcd2), "http://10.77.0.22:2379");
        assert_eq!(netns.peer_ports(zk1), vec![2888, 3888]);
        assert_eq!(netns.netns(zk1).as_deref(), Some("lb-zk1"));
        let json = serde_json::to_string(&netns).unwrap();
        assert_eq!(serde_json::from_str::<Topology>(&json).unwrap(), netns);
    }
}
