//! The Docker flow: the `compose` cluster, its files and the faults that fit it.
//!
//! `docker-compose.yml` at the repository top runs the managed cluster's servers in containers;
//! this crate is everything lockbench knows about it. Why it has this shape:
//!
//! - **One topology, two ways to run it.** The compose file is *generated* ([`mod@file`]) from the
//!   managed cluster's own data: the same [`SERVERS`](lockbench_cluster::SERVERS) (names,
//!   systems, octets) and the same [`Launch`](lockbench_cluster::Launch) (command line and
//!   config files, so `tickTime`, the 4lw whitelist, Sentinel timings and Redis persistence
//!   settings are written once). A test fails when the committed files differ from the
//!   generator's output, so they cannot drift again.
//! - **Containers have their managed host's address.** On the compose network (`10.78.0.0/24`)
//!   each container gets the last octet its namespace has in managed mode and the standard
//!   ports, which the host reaches directly: lockbench, the Sentinels and the replicas all see
//!   the same addresses, so `redis-sentinel` works from the host with no announce settings.
//!   [`endpoints`] are those addresses (`compose/endpoints.toml` is the same, generated).
//! - **Ready means healthy.** Every service has a healthcheck (the managed cluster's notion of
//!   healthy, asked inside the container); [`wait_healthy`] asks the same from where lockbench
//!   runs, bounded, naming the server and address that is not.
//! - **Faults are data first.** [`plan`] turns a [`Fault`](lockbench_core::Fault) into
//!   [`Action`]s (`docker` command lines) without side effects, and is unit-tested as command
//!   lines. [`ComposeNemesis`] executes a plan and reports it like every nemesis: a fault it
//!   cannot express here is an event with `applied = false` and a note, never skipped silently.
//!
//! | verb | compose mode |
//! |---|---|
//! | `pause` / `resume` | `docker pause` / `docker unpause lockbench-<server>` |
//! | `kill` / `start` | `docker kill --signal KILL` / `docker start` |
//! | `partition` (isolate, halves) | `docker network disconnect lockbench lockbench-<server>`; `heal` reconnects it with its address |
//! | `link-delay`, `link-blackhole`, `partition` (clients-off) | `applied = false`: they need a link proxy container (not built yet) |
//! | `clock-jump`, `redis-failover`, leader/followers targets, other partition shapes | `applied = false` |
#![deny(missing_docs)]

pub mod file;
mod health;
mod nemesis;
mod plan;

pub use file::{NETWORK, container, endpoints, topology};
pub use health::{bench_cluster, detect, wait_healthy};
pub use nemesis::ComposeNemesis;
pub use plan::{Action, plan, servers};
