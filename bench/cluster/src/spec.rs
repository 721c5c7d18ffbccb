//! The managed cluster as data: one [`ServerSpec`] per server process.
//!
//! `up`, `down` and `status` iterate over [`SERVERS`]; what differs between systems (the
//! command line, the config files, the health check) is looked up by [`System`] in the
//! per-system modules. Ports are fixed because other crates' tests and the docs rely on them.

use crate::launch::Site;
use crate::state_dir::NodeDir;
use crate::topology::Topology;
use crate::{etcd, zookeeper};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Which server software a process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum System {
    /// An Apache ZooKeeper ensemble member.
    Zookeeper,
    /// An etcd cluster member.
    Etcd,
    /// A Redis server (standalone, one of the Redlock servers, or the failover pair).
    Redis,
    /// A Redis Sentinel watching the failover pair.
    Sentinel,
}

impl System {
    /// The lowercase name used in status output and the versions map.
    pub fn name(self) -> &'static str {
        match self {
            System::Zookeeper => "zookeeper",
            System::Etcd => "etcd",
            System::Redis => "redis",
            System::Sentinel => "sentinel",
        }
    }
}

/// Which list of [`lockbench_core::Endpoints`] a server belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// `endpoints.zookeeper`
    Zookeeper,
    /// `endpoints.etcd`
    Etcd,
    /// `endpoints.redis` (the standalone server)
    Redis,
    /// `endpoints.redlock` (the independent Redlock servers)
    Redlock,
    /// The failover pair: a Redis primary and its replica (in no endpoints list: clients ask
    /// the Sentinels which one is the primary).
    Failover,
    /// `endpoints.sentinel` (the three Sentinels watching the failover pair)
    Sentinel,
}

impl Group {
    /// Every group with an endpoints list, in the order the endpoints file lists them.
    pub const LISTED: [Group; 5] = [
        Group::Zookeeper,
        Group::Etcd,
        Group::Redis,
        Group::Redlock,
        Group::Sentinel,
    ];

    /// The group's name: its key in [`lockbench_core::Endpoints`] (the failover pair has no
    /// list there; its name is `failover`).
    pub fn name(self) -> &'static str {
        match self {
            Group::Zookeeper => "zookeeper",
            Group::Etcd => "etcd",
            Group::Redis => "redis",
            Group::Redlock => "redlock",
            Group::Failover => "failover",
            Group::Sentinel => "sentinel",
        }
    }
}

/// One server process of the managed cluster.
#[derive(Clone, Copy, Debug)]
pub struct ServerSpec {
    /// Unique name, also the name of its directory (`zk1`, `etcd2`, `redlock5`).
    pub name: &'static str,
    /// What it runs.
    pub system: System,
    /// Which endpoint list it is in.
    pub group: Group,
    /// 1-based member id within its system (ZooKeeper's `myid`).
    pub id: u8,
    /// The port clients use.
    pub client_port: u16,
    /// Ports the members use among themselves: ZooKeeper quorum and election ports, etcd's
    /// peer port. Empty for Redis. (Loopback topology; namespaces use the standard ports.)
    pub peer_ports: &'static [u16],
    /// Last octet of its host's address in the `netns` topology (`10.77.0.<octet>`).
    pub octet: u8,
}

const fn zk(name: &'static str, id: u8, client: u16, peers: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: System::Zookeeper,
        group: Group::Zookeeper,
        id,
        client_port: client,
        peer_ports: peers,
        octet: 10 + id,
    }
}
const fn etcd(name: &'static str, id: u8, client: u16, peers: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: System::Etcd,
        group: Group::Etcd,
        id,
        client_port: client,
        peer_ports: peers,
        octet: 20 + id,
    }
}
const fn redis(name: &'static str, group: Group, id: u8, port: u16) -> ServerSpec {
    ServerSpec {
        name,
        system: System::Redis,
        group,
        id,
        client_port: port,
        peer_ports: &[],
        octet: match group {
            Group::Redlock => 30 + id,
            Group::Failover => 39 + id,
            _ => 30,
        },
    }
}
const fn sentinel(name: &'static str, id: u8, port: u16) -> ServerSpec {
    ServerSpec {
        name,
        system: System::Sentinel,
        group: Group::Sentinel,
        id,
        client_port: port,
        peer_ports: &[],
        octet: 44 + id,
    }
}

/// Every server of the managed cluster, in start order.
pub const SERVERS: [ServerSpec; 17] = [
    zk("zk1", 1, 12181, &[12888, 13888]),
    zk("zk2", 2, 12182, &[12889, 13889]),
    zk("zk3", 3, 12183, &[12890, 13890]),
    etcd("etcd1", 1, 12379, &[12380]),
    etcd("etcd2", 2, 12381, &[12382]),
    etcd("etcd3", 3, 12383, &[12384]),
    redis("redis", Group::Redis, 1, 16379),
    redis("redlock1", Group::Redlock, 1, 16380),
    redis("redlock2", Group::Redlock, 2, 16381),
    redis("redlock3", Group::Redlock, 3, 16382),
    redis("redlock4", Group::Redlock, 4, 16383),
    redis("redlock5", Group::Redlock, 5, 16384),
    // The failover pair (fo2 starts as fo1's replica) and its Sentinels.
    redis("fo1", Group::Failover, 1, 16390),
    redis("fo2", Group::Failover, 2, 16391),
    sentinel("sen1", 1, 26390),
    sentinel("sen2", 2, 26391),
    sentinel("sen3", 3, 26392),
];

/// The program and arguments that start one server.
pub(crate) struct Command {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl ServerSpec {
    /// The server called `name`.
    pub fn by_name(name: &str) -> Option<&'static ServerSpec> {
        SERVERS.iter().find(|s| s.name == name)
    }

    /// The other members of this server's system (itself included).
    pub fn members(&self) -> impl Iterator<Item = &'static ServerSpec> + '_ {
        SERVERS
            .iter()
            .filter(move |s| s.system == self.system && s.group == self.group)
    }

    /// Writes the config files the server needs (its [`launch`](Self::launch) in the managed
    /// cluster's node directory) and returns its command line.
    pub(crate) fn prepare(
        &self,
        topo: &Topology,
        state_dir: &Path,
        node: &NodeDir,
    ) -> anyhow::Result<Command> {
        let site = Site {
            topology: topo,
            bind: topo.ip(self),
            root: node.root.clone(),
            log: Some(node.log()),
            cluster_token: etcd::cluster_token(state_dir),
        };
        let launch = self.launch(&site);
        for dir in &launch.dirs {
            std::fs::create_dir_all(dir)?;
        }
        for path in &launch.remove {
            let _ = std::fs::remove_file(path);
        }
        for f in &launch.files {
            if !(f.only_if_absent && f.path.exists()) {
                std::fs::write(&f.path, &f.contents)?;
            }
        }
        let program = match launch.program {
            "java" => zookeeper::java(),
            p => crate::install::which(p).unwrap_or_else(|| p.into()),
        };
        Ok(Command {
            program,
            args: launch.args.into_iter().map(Into::into).collect(),
        })
    }
}
