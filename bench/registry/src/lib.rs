//! Every lock backend and election recipe, once: which system (server group) it runs on
//! ([`system`]), how it is built from a scenario's knobs ([`with_backend!`],
//! [`with_elector!`]), and how its keys are kept apart from another run's ([`keys`]).
//!
//! Why a crate of its own: the runner, the worker processes, `lockbench scale`, the chaos
//! nemeses, the resource sampler and the benches all need "which servers does `zk-fair` use"
//! and "build me a `zk-fair`"; each used to keep its own table, and a new recipe had to be
//! added to all of them. Here a recipe is one match arm per table, and the compiler points at
//! every table a new [`BackendKind`](lockbench_core::BackendKind) variant is missing from.
//!
//! The constructors are macros, not a function returning `Box<dyn Backend>`: the caller's
//! body is expanded once per recipe, so the client loop stays monomorphised (no dynamic
//! dispatch on the hot path; see CONTRIBUTING, "Rules of the code").
//!
//! Issue 20 (the System boundary), where it stands: each system's endpoint groups and knob
//! tables (types, defaults, validation, key separation) live in its own crate; this crate
//! lists them ([`endpoint_groups`], [`knob_schemas`]) and loads scenarios with them
//! ([`load_scenario`]). Deviations from the plan (`notes/system-boundary.md`), and why:
//! `Endpoints` and `Knobs` are `indexmap` maps rather than a hand-written ordered map (a
//! well-kept crate), and `toml` is built with `preserve_order`, because its parser otherwise
//! hands tables over sorted and a re-written file would change order.
//!
//! Step S3a: each system implements [`lockbench_core::System`] in its crate's `system.rs`
//! (its managed servers with their ports and host addresses, its groups as
//! [`lockbench_core::Group`] consts, its standard ports, endpoint form, leader and restart
//! rules, compose image and healthcheck); [`SYSTEMS`] lists them once, and the managed
//! cluster, the nemeses and the compose generator iterate over it (`lockbench_cluster::SERVERS`
//! is [`servers`]). This crate no longer depends on `lockbench-cluster`; the cluster depends
//! on it. Step S3b (first part): each system's launch (config files, command line), health
//! and version probes (as data: [`lockbench_core::Exchange`], the cluster does the I/O) and
//! what it needs installed moved into its crate's `server.rs`, so `bench/cluster` has no
//! per-system code left. Then the chaos leader rule and probe (`System::leadership`,
//! `leader_check`, `is_leader`), so `chaos/src/targets.rs` matches no group. Still per system
//! outside the backend crates: the Debian package names (`scripts/install-deps`, also the
//! image's `compose/servers/Dockerfile`), the clock-jump emulation and the `redis-failover`
//! fault (Redis only, `chaos`), the official-images override's ZooKeeper command
//! (`bench/compose/src/file.rs`), and the recipe tables ([`with_backend!`], [`group_of`], [`expiry()`]). CONTRIBUTING's "Adding a system"
//! lists the files a new system touches today. The knob tables and key separation are
//! the systems' too (`System::knobs`, `System::separate_keys`), so [`knob_schemas`] and
//! [`keys`] iterate over [`SYSTEMS`].
#![deny(missing_docs)]

mod backend;
mod election;
pub mod expiry;
pub mod keys;
mod load;
pub mod system;

pub use expiry::{election_expiry, expiry, holder_pause, leader_pause};
pub use load::{knob_schemas, load_scenario};
pub use system::{
    SYSTEMS, addresses, check_endpoints, election_group_of, endpoint_groups, group_of,
    listed_groups, servers, system_named,
};

/// The knob table `K` of `scenario`, as a constructor error when it does not parse (the
/// constructor macros' way to read a recipe's knobs).
#[doc(hidden)]
pub fn knobs<K: lockbench_core::knobs::KnobTable>(
    scenario: &lockbench_core::Scenario,
) -> Result<K, lockbench_core::traits::BackendError> {
    let knobs = scenario.knobs.get::<K>();
    knobs.map_err(lockbench_core::traits::BackendError::Config)
}

// The macros name the recipes through these paths, so a caller needs only this crate.
#[doc(hidden)]
pub use lockbench_core as core;
#[doc(hidden)]
pub use lockbench_etcd as etcd;
#[doc(hidden)]
pub use lockbench_redis as redis;
#[doc(hidden)]
pub use lockbench_zookeeper as zookeeper;
