//! PostgreSQL as a lock system (issue 20): a primary and a streaming replica, and the
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
#![deny(missing_docs)]
