//! The Docker flow: the `compose` cluster, its files and the faults that fit it.
//!
//! `docker-compose.yml` at the repository top runs the managed cluster's servers in containers;
//! this crate is everything lockbench knows about it. Why it has this shape:
//!
//! - **One topology, two ways to run it.** The compose file is *generated* ([`mod@file`]) from the
//!   managed cluster's own data: the same [`SERVERS`](lockbench_cluster::SERVERS) (names,
//!   systems, octets) and the same [`Launch`](lockbench_core::launch::Launch) (command line and
//!   config files, so `tickTime`, the 4lw whitelist, Sentinel timings and Redis persistence
//!   settings are written once). A test fails when the committed files differ from the
//!   generator's output, so they cannot drift again.
//! - **Containers have their managed host's address.** On the compose network (`10.78.0.0/24`)
//!   each container gets the last octet its namespace has in managed mode and the standard
//!   ports, which the host reaches directly: lockbench, the Sentinels and the replicas all see
//!   the same addresses, so `redis-sentinel` works from the host with no announce settings.
//!   [`endpoints`] are those addresses (`compose/endpoints.toml` is the same, generated).
//! - **Published ports where the host cannot route to them.** Every server's client port is
//!   also published on `127.0.0.1`, at its managed loopback port, for Docker Desktop, whose
//!   containers live in a VM the host does not route to. A bounded probe ([`mod@route`]) picks
//!   the container addresses when the host reaches them, else the published ports, and says
//!   which on the first line; what the published ports cannot carry (a Sentinel naming its
//!   primary's container address, client containers, server and link faults) is refused or
//!   recorded as not applied, with the reason, never skipped silently.
//! - **Ready means healthy.** Every service has a healthcheck (the managed cluster's notion of
//!   healthy, asked inside the container); [`wait_healthy`] asks the same from where lockbench
//!   runs, bounded, naming the server and address that is not.
//! - **Faults are the managed cluster's.** The containers are a chaos [`Site`](lockbench_chaos::Site)
//!   ([`Containers`]), so compose runs use the managed [`ServerNemesis`] itself: the same
//!   target resolution (leader and followers from the same probes, the same seeded choices),
//!   the same grudge per split (iptables DROP rules inside each container's network
//!   namespace, never in the root namespace), the same faults the systems offer (Redis's
//!   failover, its clock-jump emulation); only pause, kill and start are Docker's, each
//!   checked against Docker's state.
//! - **Link faults go through the coordinator's own proxies**, as in managed mode (the
//!   runner's `links.rs`): the same in-process [`LinkProxy`](lockbench_chaos::LinkProxy) code
//!   at the same place (the coordinator, on the bridge's address; client containers reach it
//!   as managed client hosts do), so a `link-delay` costs the
//!   same hop in both modes and results stay comparable. A proxy container (`lockbench proxy
//!   --api`, Toxiproxy's HTTP API) would add a container network hop and a second process only
//!   compose runs pay for.
//!
//! | verb | compose mode |
//! |---|---|
//! | `pause` / `resume` | `docker pause` / `docker unpause lockbench-<server>` |
//! | `kill` / `start` | `docker kill --signal KILL` / `docker start` |
//! | `partition` (every split), `link-blackhole` without link proxies | iptables DROP in the containers' namespaces (`nsenter --net=/proc/<pid>/ns/net` as root, else `docker exec -u 0 <container> iptables`: [`mod@access`]), flushed on `heal` |
//! | `link-delay`, `link-blackhole` with link proxies | toxics on the coordinator's in-process proxies |
//! | `redis-failover` (offered by Redis, applied through the site as in managed mode) | the replica's namespace drops the primary, `docker kill` of the primary after its next grant; heal: `docker start`, `REPLICAOF` |
//! | `promote` | `docker kill` of the leader's container, the system's promote request to a replica (inside its namespace); heal: `docker start`, whose launch rejoins it as a replica, as in managed mode |
//! | `clock-jump` | the jump the servers' system offers (Redis's TTL emulation), as in managed mode |
//! | `packet-loss` | iptables `statistic` DROP (random or nth) in the target containers' namespaces on their links with the coordinator (the compose bridge's gateway address) and the client containers, checked with a UDP probe against the rules' counters, flushed on `heal`, as in managed mode; refused on a client container when the schedule has a link fault (the proxies hide its address) |
//! | faults on client hosts (`client<N>`, `isolate = "holder"`) | the worker's container `lockbench-client<N>` ([`clients`]): SIGSTOP/SIGKILL of its process by the coordinator (by pid as root, else `docker kill --signal`), iptables in its namespace (as above) |
#![deny(missing_docs)]

pub mod access;
pub mod clients;
pub mod file;
mod health;
pub mod route;
pub mod secure;
mod site;

pub use access::{Access, access};
pub use file::{NETWORK, container, endpoints, topology};
pub use health::{bench_cluster, detect, ensure_runs, wait_healthy};
pub use route::{Route, route};
pub use site::Containers;

use lockbench_chaos::{Group, ServerNemesis};

/// The server nemesis of the compose cluster.
pub type ComposeNemesis = ServerNemesis<Containers>;

/// A nemesis for `group`'s containers, drawing its seeded choices from `rng`.
pub fn nemesis(group: Group, rng: impl rand::RngCore + Send + 'static) -> ComposeNemesis {
    let site = Containers::new();
    let servers = site.servers(group);
    ServerNemesis::on(site, servers, rng)
}
