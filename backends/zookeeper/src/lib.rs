//! ZooKeeper lock recipes for lockbench: **zk-fair** ([`ZkFair`]), **zk-curator**
//! ([`ZkCurator`]), the deliberately naive **zk-herd**, the shared (read/write) lock
//! **zk-rwlock** and its deliberately broken twin **zk-broken-rwlock** (all [`ZkFair`] with
//! another [`Queue`]).
//!
//! zk-fair and zk-curator are the classic ephemeral-sequential queue from the ZooKeeper recipes page: every
//! contender creates an `EphemeralSequential` node under the lock's directory, the lowest
//! sequence holds the lock, and every other contender watches *only its predecessor*. That shape
//! is the whole point of comparing ZooKeeper against the other backends:
//!
//! - **Fair and herd-free.** A release wakes exactly one waiter (the next in line), never all
//!   of them, so notification fan-out per release is 1 whatever the number of waiters.
//! - **Crash-safe without a TTL.** The nodes are ephemeral: a client that dies loses its place
//!   when its session expires, and a live client never loses a lock to a timer.
//! - **A fencing token for free.** The lock node's creation zxid (`czxid`) is a cluster-wide,
//!   strictly increasing number; the per-directory sequence number is one too (per key).
//!
//! Why two recipes:
//!
//! - [`ZkFair`] is lockbench's own implementation, so that every request it sends is known and
//!   counted ([`lockbench_core::LockClient::requests_sent`]) and its notifications can be counted
//!   too ([`ZkFairClient::notifications`]). Per uncontended acquisition it sends exactly
//!   `create` + `getChildren` + `delete` (the floor for this recipe); a waiter adds one
//!   `getData`-with-watch and one more `getChildren` per hand-off. See `fair.rs` for the details
//!   (why `getData` rather than `exists` for the watch, how a `ConnectionLoss` during the create
//!   is recovered, how parents are created).
//! - [`ZkCurator`] runs the `zookeeper-client` crate's Curator-compatible recipe
//!   (`Client::lock` with `LockPrefix::new_curator`), i.e. what a Rust user would pick off the
//!   shelf. The library sends its own requests, so [`ZkCurator`] reports `requests_sent = None`
//!   and results rely on ZooKeeper's `mntr` counters for it. See `curator.rs` for how a release
//!   is made *complete* before it returns.
//!
//! Why a third, naive recipe: zk-herd ([`Queue::HERD`]) queues the same way but has every
//! waiter watch the lock directory's children ([`WaitStrategy::Children`]), so one release wakes
//! all N waiters. It is what the recipes page warns against, kept so the herd workload can
//! *measure* the fan-out (notifications, wasted wake-ups and requests per release) instead of
//! repeating the claim. It is the zk-fair client with a different wait-strategy value, so the
//! two differ in nothing else. zk-rwlock ([`Queue::RWLOCK`]) is the same client again with
//! `read-`/`write-` nodes: a reader waits only for the next lower write node, so a writer's
//! release wakes every reader queued behind it at once, which is correct there (they may all
//! hold together). zk-broken-rwlock ([`Queue::BROKEN_RWLOCK`]) is zk-rwlock whose writers do
//! not wait for read nodes, on purpose: the broken recipe that proves the shared-lock checker
//! alive. All of them count their wake-ups backend-wide
//! ([`lockbench_core::WakeupTally`], [`lockbench_core::Backend::wakeups`]).
//!
//! Sessions (`connect.rs`): each lockbench client is one ZooKeeper session. Sessions are opened
//! *detached*, so that [`LockClient::abandon`](lockbench_core::LockClient::abandon) can drop the
//! TCP connection without the `CloseSession` that the crate otherwise sends when the last
//! `Client` handle is dropped: the server then sees exactly what it sees when a process
//! crashes, and the session's ephemeral nodes vanish only after the session timeout.
//! [`LockClient::close`](lockbench_core::LockClient::close) ends the session gracefully by
//! re-attaching to it and closing it, so its nodes vanish at once.
//!
//! Leader election (`election.rs`, [`ZkElection`]): the recipes page's election, for the
//! failover workload: the same ephemeral-sequential queue, where the first in line leads.
//! Registered, like the lock recipes, by [`elections`] (through `System::elections`).
//!
//! Request counters for cross-checking (`counters.rs`): ZooKeeper's `mntr` four-letter word,
//! `zk_packets_received`, summed over the ensemble members; watch notifications sent, from the
//! `mntr` watch-trigger summaries; per-session packets from `cons` ([`session_packets`]).
#![deny(missing_docs)]

mod connect;
mod counters;
mod curator;
mod diagnose;
mod election;
pub mod elections;
mod errors;
mod fair;
mod knobs;
mod observe;
mod paths;
pub mod recipes;
pub mod secure;
mod server;
pub mod system;
mod tls;

/// The endpoint group ZooKeeper's clients read (`zookeeper = [...]` in an endpoints file).
pub const GROUP: &str = "zookeeper";

pub use counters::{SessionPackets, session_packets};
pub use curator::{CuratorHandle, ZkCurator, ZkCuratorClient};
pub use election::{ZkCandidate, ZkElection};
pub use fair::{FairHandle, Notifications, Queue, WaitStrategy, ZkFair, ZkFairClient};
pub use knobs::{KNOBS, ZookeeperKnobs};
