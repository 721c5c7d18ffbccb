//! Redis lock recipes for lockbench: `redis-setnx`, `redlock`, the deliberately broken
//! `redis-broken-nonx`, and `redis-sentinel` (`redis-setnx` on the primary Sentinel names).
//!
//! # Why the recipes have this shape
//!
//! - **Every check-then-act is one Lua script** (`scripts`). Redis runs a script atomically,
//!   so "set if absent, then bump the fencing counter", "delete if it is still mine" and
//!   "extend if it is still mine" cannot interleave with another client. Without that, a
//!   release could delete a lock that expired and was re-granted to someone else in between
//!   its `GET` and its `DEL`.
//! - **`redis-setnx` hands out a fencing token** (`setnx`): the grant and the `INCR` of a
//!   per-lock counter happen in the same script, so tokens grow with grants. The token is only
//!   as durable as that one server's data (see `setnx`).
//! - **Redlock hands out none** (`redlock`): its servers are independent, so nothing orders
//!   grants across them; results say "none" rather than invent a number.
//! - **Waiters poll** with `retry_delay + U[0, retry_jitter)` (`retry`), as the published
//!   recipes do; the jitter comes from a seeded `ChaCha8Rng` per client, so a run is
//!   reproducible from its seed.
//! - **Each client owns its connections** (`connect`): one `MultiplexedConnection` per
//!   server, with explicit timeouts and `TCP_NODELAY`, rebuilt after a connection error or
//!   timeout. Clients share nothing, as separate processes would not.
//! - **Every request is counted** by the client, including the `SCRIPT LOAD` a first
//!   `EVALSHA` may need, and the servers' own count (`commandstats`) leaves out the commands
//!   Redis 7 counts inside scripts, so the two can be compared one to one.
//! - **Outcomes are three-valued** (`errors`): a request that timed out after being sent is
//!   `info` (it may have run); one that was refused or never sent is `fail`.
//! - **`close` and `abandon` release nothing**: a lock still held (or left by an acquire the
//!   caller cancelled halfway) is freed by its TTL, which is how Redis frees a dead client's
//!   lock anyway. The workload releases what it holds before closing.
//! - **The broken recipe is the same code** with a mode flag ([`SetMode::BrokenNoNx`]): only the
//!   script differs, by the missing `NX`, so what the checkers catch is exactly that.
//! - **Leader election** (`election`, [`RedisLeaseElection`]) for the failover workload is a
//!   lease on one key (`SET NX PX`), renewed by the leader and polled by followers;
//!   registered, like the lock recipes, by [`elections`] (through `System::elections`).
//! - **The faults only Redis takes are this crate's** (offered through
//!   [`System`](lockbench_core::System)): the clock-jump emulation (`clock_jump`: every TTL
//!   shortened) and `redis-failover` (`failover_fault`, asking the pair and its Sentinels
//!   through `failover_probe`), written against the chaos controller's access in core; the
//!   firewall, signals and namespaces stay the chaos crate's.
#![deny(missing_docs)]

/// The endpoint group of the standalone Redis server (`redis-setnx`, `redis-pubsub`).
pub const REDIS: &str = "redis";
/// The endpoint group of the independent Redlock servers.
pub const REDLOCK: &str = "redlock";
/// The endpoint group of the Sentinels watching the failover pair (`redis-sentinel`).
pub const SENTINEL: &str = "sentinel";

mod admin_eval;
#[cfg(test)]
mod canned_access;
mod clock_jump;
mod commandstats;
mod connect;
mod direct;
pub mod election;
pub mod elections;
mod errors;
mod failover_fault;
mod failover_probe;
mod knobs;
pub use knobs::{KNOBS, RedisKnobs, RedlockKnobs, separate_keys};
mod observe;
pub mod pubsub;
pub mod recipes;
pub mod redlock;
mod retry;
pub mod scripts;
pub mod secure;
mod sentinel;
pub mod server;
pub mod setnx;
pub mod system;
mod tls_errors;
mod value;

pub use connect::CONNECT_TIMEOUT;
pub use election::RedisLeaseElection;

pub use redlock::{RedlockBackend, RedlockClient, RedlockHandle};
pub use setnx::{SetMode, SetNxBackend, SetNxClient, SetNxHandle};
pub use value::LockValue;
