//! PostgreSQL as a lock system: a primary and a streaming replica, and the
//! advisory-lock recipes many teams use because they already run PostgreSQL
//! (`pg_advisory_lock` in Rails' `with_advisory_lock`, Flyway and Liquibase migrations, job
//! queues such as GoodJob and Oban).
//!
//! Why it is worth measuring next to ZooKeeper, etcd and Redis: an advisory lock is tied to a
//! session. It has no lease and no token, and it is not replicated: a paused holder keeps it
//! forever (the opposite failure of a lease), and a failover drops every lock while the
//! holders may still believe they hold them.
//!
//! This crate is the whole system, behind `lockbench_core::System`: nothing outside it names
//! PostgreSQL but the registry's line, the install list and the README's table.
//!
//! The recipes' parts, one concept a file:
//! - `recipe`: the three recipes ([`PgRecipe`]) and how each waits;
//! - `recipes`: their entries for the registry ([`recipes::RECIPES`]);
//! - `knobs`: `[postgres]` ([`PostgresKnobs`]), and how long a dead holder's lock lives;
//! - `sql`: every statement a client sends, and why each has its shape;
//! - `session`: one session, and whether the server certainly ended it;
//! - `tls`: TLS and the password from the group's connection settings, and clear errors;
//! - `client`: [`PgClient`], what each outcome means;
//! - `backend`: [`PgBackend`], the recipe bound to the servers;
//! - `counters`: the servers' count of the clients' statements (`pg_stat_statements`);
//! - `observe`: who the primary says holds each lock (`pg_locks`).
//!
//! The system's parts (the servers lockbench runs and faults):
//! - `system`: [`system::Postgres`], the pair `pg1`/`pg2` behind `lockbench_core::System`;
//! - `server`: how a server starts (config files and `start-postgres.sh`), the same in managed
//!   mode and in a container, and why it runs as `postgres` when lockbench is root;
//! - `probe`: the health, role, version and promote probes as protocol bytes;
//! - `secure`: the pair on a secure cluster (TLS only, SCRAM, client certificates, least
//!   privilege);
//! - `secure_probe`: the probes of a secure pair (TLS after `SSLRequest`, SCRAM).
#![deny(missing_docs)]

/// The endpoint group of the PostgreSQL servers (primary and replica; clients use the one
/// that accepts writes).
pub const POSTGRES: &str = "postgres";

mod backend;
mod client;
mod counters;
mod knobs;
mod observe;
mod probe;
pub mod recipe;
pub mod recipes;
pub mod secure;
mod secure_probe;
pub mod server;
mod session;
pub mod sql;
pub mod system;
mod tls;

pub use backend::{PgBackend, application_name};
pub use client::{PgClient, PgHandle};
pub use knobs::{KNOBS, PostgresKnobs, separate_keys};
pub use recipe::PgRecipe;
