//! The `lockbench` binary's integration tests, one test binary (one link on a 2-core machine)
//! with a module per area; `common` holds the helpers they share.
//!
//! Most run the built binary (`CARGO_BIN_EXE_lockbench`) against the shared managed cluster as
//! an external cluster; those that need servers of their own start a private cluster (own state
//! directory, namespace prefix and subnet). Two are `#[ignore]`d as heavy and run in
//! scripts/test's first phase (`--run-ignored only`): `compose` (the Docker flow) here and the
//! cluster's lifecycle test in lockbench-cluster.

mod capacity;
mod chaos;
mod cli;
mod common;
mod compare;
mod compose;
mod failover;
mod generator;
mod partition;
mod proxy;
mod server_truth;
mod silent;
