//! Managed ZooKeeper, etcd, Redis and PostgreSQL servers started from the OS packages.
//!
//! lockbench compares lock recipes against *real* servers, and on a machine without Docker it
//! runs them itself ("managed mode"): a 3-member ZooKeeper ensemble, a 3-member etcd cluster, a
//! standalone Redis, five independent Redis servers for Redlock, a Redis primary with one
//! replica watched by three Sentinels (the failover pair, `fo1`/`fo2`, `sen1`-`sen3`), and a
//! PostgreSQL primary with one streaming replica (`pg1`/`pg2`). Why the crate has this shape:
//!
//! - **Two topologies, one cluster.** Faults need hosts: a partition is a firewall rule in the
//!   *receiving host*, which loopback servers do not have. So, as root, every server runs in its
//!   own network namespace on a bridge the project creates ([`hosts`]: `lb-zk1`, ...,
//!   `lb-br0`, subnet `10.77.0.0/24`, standard ports), and the chaos crate adds client hosts
//!   and iptables rules to the same network. Without root (or with
//!   `LOCKBENCH_TOPOLOGY=loopback`) the servers run on 127.0.0.1 with fixed ports, and
//!   partitions are reported as unavailable. [`topology`] makes the choice and records it in
//!   the state directory; clients only ever see [`ClusterStatus::endpoints`], so nothing else
//!   depends on it.
//! - **One network per cluster.** Namespace names and addresses are fixed per prefix, so the
//!   network records which state directory owns it, and a second cluster (tests that partition
//!   and kill use their own) must pick another `LOCKBENCH_NETNS_PREFIX` / `LOCKBENCH_SUBNET`.
//!   `down` removes the network with everything in it (client hosts and their processes,
//!   firewall rules, veths, bridge); `up` removes leftover rules that make servers unreachable.
//! - **Servers outlive the command.** `lockbench up` starts them and returns; a later
//!   `lockbench run` uses them; `lockbench down` stops them. So no state lives in memory: a
//!   [`Cluster`] is just a state directory, and every call reads pid files, `/proc` and the
//!   servers' own health answers afresh (`process.rs` spawns servers in their own process group
//!   with output in `<state>/cluster/<name>/server.log`).
//! - **Idempotent and self-healing.** `up` compares what runs with what should and fixes the
//!   difference: healthy servers are reused, leftovers of a crashed run are killed and
//!   restarted, a system with no live member starts from empty data directories. A process is
//!   only ever signalled after it is recognised as ours (its command line or working directory
//!   is inside the state directory), so a recycled pid never gets a stranger killed; a port
//!   held by a stranger is an error that names it.
//! - **The cluster is data, and knows no system by name.** [`spec::SERVERS`] lists every
//!   server (name, system, ports) of the systems `lockbench-registry` registers; what differs
//!   per system (command line and config files, health check, version query, what must be
//!   installed, its standard ports, its leader and restart rules) is the system's, in its own
//!   crate behind [`System`]. `up`, `down` and `status` are loops over that list,
//!   with no per-system `match`.
//! - **Health means "a lock client can use it"** (asked from the root namespace, like the
//!   coordinator's clients): ZooKeeper `srvr` says `leader`/`follower` with
//!   exactly one leader, etcd `/health` is `true`, Redis answers `PING`. Probes are raw
//!   request/reply exchanges over `TcpStream` with a timeout, so no client crate is needed:
//!   the system gives the bytes to send and reads the reply ([`lockbench_core::Exchange`]),
//!   the cluster does the I/O ([`exchange`]).
//! - **Plain or secure, recorded like the topology.** `lockbench up --secure`
//!   ([`Cluster::with_secure`]) starts the servers with each system's secure settings (TLS with
//!   client certificates, lockbench's user; [`secure`]): certificates and a generated password
//!   in `<state>/secure/`, which is also the record that later commands (a run, a restart by a
//!   fault, `status`) find, so they probe and connect with the same settings.
//! - **Parallel callers are serialised** by `flock` on `<state>/cluster.lock` ([`ClusterLock`]),
//!   so parallel test processes calling [`for_tests`] never start a server twice.
//!
//! Caveat for tests: there is one managed cluster per machine and user. The lock is held only
//! while the cluster is being brought up or down, not while tests use it; a test that stops
//! servers (this crate's lifecycle test) will disturb other crates' tests running at the same
//! time. CI runs that test on its own.
#![deny(missing_docs)]

pub mod bridge_firewall;
pub mod clock;
mod cluster;
pub mod entry;
mod health;
pub mod hosts;
mod install;
mod lock;
mod net;
mod private;
mod process;
pub mod secure;
mod slow_disk;
pub mod spec;
mod state_dir;
pub mod topology;

pub use clock::ClockFile;
pub use cluster::{Cluster, UpReport, endpoints};
pub use hosts::{Host, NetConfig, Network, udp_delivered};
pub use install::{ensure_installed, missing as missing_packages};
pub use lock::{ClusterLock, holder as lock_holder, lock_path, try_lock_path};
pub use lockbench_core::launch::{Launch, Site};
pub use lockbench_core::{Group, ServerSpec, System};
pub use net::{SecureProbe, exchange, secure_exchange};
pub use private::PrivateCluster;
pub use slow_disk::SlowDisks;
pub use spec::{SERVERS, by_name};
pub use state_dir::default_state_dir;
pub use topology::Topology;

use lockbench_core::Endpoints;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Every server of a managed cluster, and where clients reach it.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterStatus {
    /// The state directory the cluster lives in.
    pub state_dir: PathBuf,
    /// Where the servers run: `loopback`, or `netns` with the network's prefix and subnet.
    pub topology: Topology,
    /// One entry per server, in [`SERVERS`] order.
    pub servers: Vec<ServerStatus>,
    /// The addresses clients use.
    pub endpoints: Endpoints,
}

impl ClusterStatus {
    /// `name=role` of every healthy server (`pg1=primary`), sorted.
    pub fn healthy_roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = self
            .servers
            .iter()
            .filter(|s| s.healthy)
            .map(|s| format!("{}={}", s.name, s.role.as_deref().unwrap_or("-")))
            .collect();
        roles.sort();
        roles
    }

    /// `true` when every server runs and is healthy.
    pub fn all_healthy(&self) -> bool {
        self.servers.iter().all(|s| s.healthy)
    }
}

/// One server's process and health.
#[derive(Clone, Debug, Serialize)]
pub struct ServerStatus {
    /// `zk1`, `etcd2`, `redis`, `redlock5`, ...
    pub name: String,
    /// `zookeeper`, `etcd` or `redis`.
    pub system: String,
    /// Which endpoint list it is in (`redis` is the standalone server, `redlock` the five).
    pub group: Group,
    /// The address clients use.
    pub endpoint: String,
    /// The network namespace it runs in (`lb-zk1`), in the `netns` topology.
    pub host: Option<String>,
    /// The IP address it listens on.
    pub addr: std::net::IpAddr,
    /// The pid of our live server process, if there is one.
    pub pid: Option<u32>,
    /// Our process for this server is alive.
    pub running: bool,
    /// It is running and its health check passes.
    pub healthy: bool,
    /// ZooKeeper's mode (`leader` / `follower`); `None` for etcd and Redis.
    pub role: Option<String>,
    /// Its log file.
    pub log: PathBuf,
    /// Resident memory (`VmRSS`), when running.
    pub rss_bytes: Option<u64>,
}

/// Server versions for the results' environment block, asked from the servers themselves
/// (each system's [`System::version_check`]: ZooKeeper `srvr`, etcd `GET /version`, Redis
/// `INFO server`), so they are right for external clusters too. Maps a system's name to a
/// version; a system whose servers do not answer (or that has no endpoints, or reports no
/// version) is left out. Every address is asked at once, so servers that accept connections
/// but never answer cost one probe timeout in all, not one each (eight silent servers used to
/// hold a run up for 12 s before it began).
pub async fn server_versions(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let ask = |system: &'static dyn System| async move {
        let groups = lockbench_registry::listed_groups();
        let lists = groups.into_iter().filter(|g| {
            let mut servers = system.servers().iter();
            servers.any(|s| s.group == *g)
        });
        let addrs: Vec<String> = lists
            .flat_map(|g| endpoints.get(g.name()))
            .cloned()
            .collect();
        let answers = futures::future::join_all(addrs.iter().map(|a| async move {
            let check = system.version_check(a)?;
            system.version(&net::exchange(&check).await.ok()?)
        }));
        let version = answers.await.into_iter().flatten().next()?;
        Some((system.name().to_string(), version))
    };
    let all = lockbench_registry::SYSTEMS.iter().map(|s| ask(*s));
    futures::future::join_all(all)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Waits until every server of a cluster laid out as `topology` is healthy (the checks `up`
/// uses, asked from this process), at most `timeout` (`ZERO`: one probe). `Err` holds the
/// servers still unhealthy at the deadline. For clusters lockbench did not start itself (the
/// compose cluster).
pub async fn wait_healthy(
    topology: &Topology,
    timeout: std::time::Duration,
) -> Result<(), Vec<&'static str>> {
    wait_healthy_secure(topology, None, timeout).await
}

/// [`wait_healthy`] on a secure cluster: its secured servers asked over TLS as lockbench's
/// user with `sec` (the compose cluster's secure profile, [`secure::probe`]).
pub async fn wait_healthy_secure(
    topology: &Topology,
    sec: Option<&SecureProbe>,
    timeout: std::time::Duration,
) -> Result<(), Vec<&'static str>> {
    wait_servers_healthy(topology, &SERVERS.to_vec(), sec, timeout).await
}

/// [`wait_healthy_secure`] for `servers` only (a run waits for the servers it uses).
pub async fn wait_servers_healthy(
    topology: &Topology,
    servers: &[&'static ServerSpec],
    sec: Option<&SecureProbe>,
    timeout: std::time::Duration,
) -> Result<(), Vec<&'static str>> {
    health::wait_healthy(topology, servers, sec, timeout).await
}

/// For tests in other crates: brings the managed cluster in [`default_state_dir`] up (under the
/// cluster lock, so parallel test processes do not race) and returns its endpoints. The cluster
/// is left running; CI's wrapper script stops it with `lockbench down`. Panics with the reason
/// (naming the unhealthy server and its log) when it cannot come up.
pub async fn for_tests() -> Endpoints {
    let cluster = Cluster::new(default_state_dir());
    match cluster.up().await {
        Ok(report) => report.status.endpoints,
        Err(e) => panic!("lockbench managed cluster did not come up: {e:#}"),
    }
}
