//! The chaos controller: where faults become real.
//!
//! A fault is data ([`lockbench_core::Fault`]: a verb on named targets). A [`Nemesis`] applies
//! it to real processes and hosts and reports what it did as [`FaultEvent`]s, which the runner
//! records in the history on the run's clock. Nemeses never panic on a fault they cannot apply:
//! they report it with `applied = false` and a note saying why, so a result never claims a
//! fault that did not happen.
//!
//! Why the crate has this shape:
//!
//! - **Hosts belong to the cluster crate.** Servers must be *started* inside their network
//!   namespaces, so the namespaces, the bridge and the topology choice live in
//!   `lockbench-cluster` ([`Network`], [`Host`], [`Topology`], re-exported here). This crate
//!   only *acts* on them: it never creates a server host, and client hosts come from
//!   [`Network::client_host`].
//! - **Partitions are data first.** [`grudge`] turns a [`lockbench_core::PartitionSpec`] into
//!   "who drops whom" without side effects (unit-tested per split); `firewall.rs` turns that
//!   into `iptables -A INPUT -s <peer> -j DROP` inside the namespaces (Jepsen's grudge), and
//!   heal flushes. The root namespace's firewall is never touched: the coordinator process
//!   (root namespace, the bridge address) is cut off by rules on the *other* side.
//! - **Probes run inside the target's host** (`probe.rs`): leader lookups and a system's
//!   clock jump still reach a server that a partition has cut off from the coordinator.
//! - **No system is named here.** What only one system's servers can take is the system's,
//!   offered through its `System` (`lockbench_core::SystemFault`: `redis-failover`;
//!   `lockbench_core::ClockJump`; a watched group's leader): this crate finds it by verb
//!   (`offered.rs`, `clock.rs`) and lends it the mechanics (probes from inside the hosts, a
//!   link cut, a kill, a restart) through `lockbench_core::FaultAccess`.
//! - **Nothing in memory is needed to clean up.** Rules live in namespaces the project owns,
//!   servers are found by pid files: [`cleanup`] and `Cluster::down` undo everything after a
//!   `kill -9` of whatever applied the faults.
//!
//! - **Link faults go through a proxy.** `tc netem` is unavailable here, so `link-delay` (and,
//!   when a run has link faults, `link-blackhole`) are toxics on in-process TCP proxies
//!   ([`LinkProxy`], Toxiproxy's latency and timeout toxics; not the `noxious` crate, which
//!   leaves Nagle on and adds ~40 ms per message here): [`LinkProxies`] gives each client
//!   its own proxy to each server and rewrites the client's endpoints; [`LinkNemesis`] applies
//!   the faults. [`LinkProxy`] alone is the API for capping one backend link (latency).
//! - **The proxy speaks Toxiproxy's HTTP API** ([`ToxiproxyApi`], served by `lockbench
//!   proxy --api`), so a proxy of its own (in a container, say) can be driven by any
//!   Toxiproxy client. Runs on the compose cluster use the in-process proxies, as managed
//!   runs do (the same hop at the same place, so results stay comparable).
//! - **Where servers run is a [`Site`]**: the managed cluster's namespaces ([`Managed`]) or
//!   docker-compose.yml's containers (the compose crate's); the [`ServerNemesis`] is written
//!   once over it.
//! - **Every fault has one owner.** Worker processes are the [`ClientNemesis`]'s (signals),
//!   servers and firewall rules the server nemesis's, proxies the [`LinkNemesis`]'s; a run's
//!   [`Composite`] sends each fault where its kind's [`Route`](lockbench_core::Route) says
//!   (decided in `lockbench-core`, beside the verb). Every nemesis `match`es on the fault
//!   exhaustively, so a new kind does not compile until each one has said what it does with it
//!   (CONTRIBUTING, "Adding a fault").
//!
//! In the loopback topology (not root, or no namespaces) pauses, kills, restarts, clock
//! jumps and proxied link faults work; partitions and the iptables black-hole are returned
//! with `applied = false`.
#![deny(missing_docs)]

mod cleanup;
mod client_nemesis;
mod clock;
mod clock_shift;
mod composite;
mod disk_stall;
mod firewall;
pub mod grudge;
mod link_nemesis;
mod link_proxies;
mod link_proxy;
mod link_toxic;
mod loss;
#[cfg(test)]
mod nowhere;
mod offered;
mod probe;
mod promote;
mod seen;
mod server_nemesis;
mod site;
mod targets;
pub mod toxiproxy_api;

pub use cleanup::cleanup;
pub use client_nemesis::{ClientNemesis, ClientProcess, Respawn};
pub use composite::{Composite, Unreachable};
pub use link_nemesis::LinkNemesis;
pub use link_proxies::LinkProxies;
pub use link_proxy::LinkProxy;
pub use link_toxic::{Stream, Toxic, ToxicKind};
pub use lockbench_cluster::{Group, Host, NetConfig, Network, Topology};
pub use server_nemesis::ServerNemesis;
pub use site::{Managed, Reach, Site};
pub use targets::{choose, leader, needs_leader, resolve};
pub use toxiproxy_api::ToxiproxyApi;

use lockbench_core::{Fault, FaultEvent, RunClock};
use std::future::Future;

/// Applies faults and undoes them (Jepsen's nemesis).
///
/// Contract: `apply` returns one event per fault window it opened or closed (a `heal` closes
/// every open partition window); `heal_all` undoes everything still in effect and must be
/// safe to call at any time, any number of times (it is the teardown safety net).
pub trait Nemesis: Send {
    /// Applies `fault` now.
    fn apply(
        &mut self,
        fault: &Fault,
        clock: &RunClock,
    ) -> impl Future<Output = Vec<FaultEvent>> + Send;

    /// Undoes every fault still in effect.
    fn heal_all(&mut self, clock: &RunClock) -> impl Future<Output = Vec<FaultEvent>> + Send;
}
