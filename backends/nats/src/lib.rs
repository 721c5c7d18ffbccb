//! NATS JetStream key-value as a lock system: three `nats-server` 2.9 processes in one
//! JetStream cluster, a bucket replicated on all three (R3), and the `nats-kv` recipe.
//!
//! Why it is worth measuring next to ZooKeeper and etcd: a KV bucket is a stream with one
//! Raft group, and its compare-and-set (`create`: only if absent; `update`: only if the last
//! revision matches) is all a lock needs. The revision is the stream's sequence, monotonic per
//! bucket: a fencing token for free. What 2.9 lacks is a per-key TTL (it arrived in 2.11): a
//! lock's life is the bucket's `max_age`, renewed by rewriting the entry, and an entry that
//! ages out sends no event to a watcher. And on 2.9 two writers expecting the same delete
//! marker's revision of a replicated bucket can both win (measured): the recipe creates only on
//! an empty key and releases by deleting its message (see [`client`] for the measurement and
//! what a waiter does).
//!
//! This crate is the whole system, behind `lockbench_core::System`: nothing outside it names
//! NATS but the registry's line, the install lists and the docs.
//!
//! The recipe's parts, one concept a file:
//! - `recipes`: `nats-kv`'s entry for the registry ([`recipes::RECIPES`]);
//! - `knobs`: `[nats]` ([`NatsKnobs`]): bucket, max age, key prefix, timeouts;
//! - `bucket`: the bucket's name and settings, its keys, and opening it on a connection;
//! - [`client`]: [`NatsClient`], acquire / renew / release and what each outcome means;
//! - `backend`: [`NatsBackend`], the recipe bound to the servers;
//! - `login`: the clients' TLS and user on a secure cluster, and what a refusal means;
//! - `monitor`: the monitoring port's HTTP or HTTPS (`/connz`), from async code, and where a
//!   server behind a proxy listens (its `INFO` line);
//! - `counters`: the servers' count of the clients' messages (`/connz` `in_msgs`);
//! - `observe`: who the stream leader says holds each lock (the key's last message).
//!
//! The system's parts (the servers lockbench runs and faults):
//! - `system`: [`system::Nats`], `nats1`..`nats3` behind `lockbench_core::System`;
//! - `server`: the config file a server starts with, and its probes as `Exchange`s: health
//!   and version on the monitoring port, the leader check (the default bucket's stream
//!   leader) in the client protocol on the client port, where the fault nemesis asks;
//! - [`secure`]: what a secure cluster's config adds (TLS, HTTPS monitoring, users and their
//!   permissions);
//! - `secure_probe`: the leader check on a secure cluster (`INFO`, TLS, then the login).
#![deny(missing_docs)]

/// The endpoint group of the NATS servers (`nats = [...]`).
pub const NATS: &str = "nats";

mod backend;
mod bucket;
pub mod client;
mod counters;
mod knobs;
mod login;
mod monitor;
mod observe;
pub mod recipes;
pub mod secure;
mod secure_probe;
pub mod server;
pub mod system;

pub use backend::NatsBackend;
pub use bucket::{bucket_name, key_name};
pub use client::{NatsClient, NatsHandle};
pub use knobs::{KNOBS, NatsKnobs, separate_keys};
pub use monitor::monitor_address;
