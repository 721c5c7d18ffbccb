//! The `lockbench` binary's integration tests, one test binary (one link on a 2-core machine)
//! with a module per area; `common` holds the helpers they share.
//!
//! Most run the built binary (`CARGO_BIN_EXE_lockbench`) against the shared managed cluster as
//! an external cluster; those that need servers of their own start a private cluster (own state
//! directory, namespace prefix and subnet). Two are `#[ignore]`d as heavy, `compose` (the Docker
//! flow) and `swarm` (workers as Swarm tasks). scripts/test runs `swarm` first, alone, with the
//! workspace's two others (the cluster's lifecycle test in lockbench-cluster, the leftover
//! containers' test in lockbench-runner), then `compose` beside every other test.

mod adapters;
mod capacity;
mod chaos;
mod ci_formats;
mod cli;
mod common;
mod compare;
mod compose;
mod conventions;
mod counters;
mod dial;
mod failover;
mod generator;
mod k8s_manifests;
mod logging;
mod loss;
mod partition;
mod pg_failover;
mod proxy;
mod redlock_clock;
mod redlock_minority;
mod reference;
mod secure;
mod secure_up;
mod server_truth;
mod silent;
mod steady;
mod swarm;
mod verdict;
mod watchdog;
mod workers;
