//! MariaDB as a lock system: a primary and a replica, and MySQL's named locks (`GET_LOCK`,
//! `RELEASE_LOCK`, `IS_USED_LOCK`), the lock Rails (`with_advisory_lock` on MySQL), Laravel
//! (`Cache::lock` on the database store's siblings, `withoutOverlapping`), Django packages and
//! many job runners take because the application already has MySQL or MariaDB.
//!
//! Why it is worth measuring next to ZooKeeper, etcd and Redis: a named lock is tied to a
//! session. It has no lease and no token, and it is not replicated: a promotion drops every
//! lock while the holders may still believe they hold them. Unlike PostgreSQL's advisory lock,
//! the server ends an idle session after `wait_timeout`: a holder that is paused or cut off
//! for longer loses its lock, and nothing tells it until it next speaks.
//!
//! This crate is the whole system, behind `lockbench_core::System`.
//!
//! The recipes' parts, one concept a file:
//! - `recipe`: the two recipes ([`MariaRecipe`]) and how each waits;
//! - `recipes`: their entries for the registry ([`recipes::RECIPES`]);
//! - `knobs`: `[mariadb]` ([`MariadbKnobs`]), and how long a dead holder's lock lives;
//! - `session`: one session on the primary, how it is found, and TLS and the password from the
//!   group's connection settings;
//! - `client`: [`MariaClient`], what each outcome means;
//! - `backend`: [`MariaBackend`], the recipe bound to the servers;
//! - `counters`: the servers' count of the clients' statements (`performance_schema`'s
//!   statement digests);
//! - `observe`: who the primary says holds each lock (`IS_USED_LOCK` and the holder session's
//!   `@lockbench_client`).
//!
//! The system's parts (the servers lockbench runs and faults):
//! - `system`: [`system::Mariadb`], the pair `maria1`/`maria2` behind `lockbench_core::System`;
//! - `server`: how a server starts (an option file and `start-mariadb.sh`), the same in
//!   managed mode and in a container;
//! - `probe`: the health, role, version and promote probes as protocol bytes;
//! - `secure`: the pair on a secure cluster (TLS only, client certificates, passwords, least
//!   privilege);
//! - `secure_probe`: the probes of a secure pair (TLS after the greeting, the administrator's
//!   login).
#![deny(missing_docs)]

/// The endpoint group of the MariaDB servers (primary and replica; clients use the one that
/// is not read-only).
pub const MARIADB: &str = "mariadb";

mod backend;
mod client;
mod counters;
pub mod knobs;
mod observe;
mod probe;
pub mod recipe;
pub mod recipes;
pub mod secure;
mod secure_probe;
pub mod server;
mod session;
pub mod system;

pub use backend::{MariaBackend, client_name};
pub use client::{MariaClient, MariaHandle};
pub use knobs::MariadbKnobs;
pub use recipe::MariaRecipe;
