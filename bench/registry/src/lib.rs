//! Every registered system and recipe, once: the systems ([`SYSTEMS`]), their lock recipes
//! ([`recipes`], built by name with [`backend`]), which servers a recipe runs on
//! ([`group_of`]), how long its dead holder's lock lives ([`expiry()`]), election recipes
//! ([`with_elector!`]), and how a run's keys are kept apart from another run's ([`keys`]).
//!
//! Why a crate of its own: the runner, the worker processes, `lockbench scale`, the chaos
//! nemeses, the resource sampler and the benches all need "which servers does `zk-fair` use"
//! and "build me a `zk-fair`". Each system's crate says that about its own recipes (a
//! `lockbench_core::Recipe` per recipe, listed by `System::recipes`); this crate lists the
//! systems once and answers by looking the recipe up. Adding a system is its line in
//! [`SYSTEMS`] (and the crate's dependency line); adding a recipe to a system touches
//! nothing here.
//!
//! A recipe is built as a `lockbench_core::AnyBackend`: the client loop is generic over the
//! backend but instantiated once, with one boxed future per lock call (timed by
//! `cargo bench -p lockbench --bench hot_paths -- lock_call`; see CONTRIBUTING, "Rules of
//! the code"). An earlier design, a constructor macro that expanded the caller's body once per
//! recipe, kept the set of recipes closed.
//!
//! The knob tables and key separation are the systems' too (`System::knobs`,
//! `System::separate_keys`), so [`knob_schemas`] and [`keys`] iterate over [`SYSTEMS`], and
//! [`load_scenario`] checks a scenario's recipe names against the registered ones. Still
//! per system here: the election recipes ([`with_elector!`], [`election_group_of`]), which
//! no new system has needed yet. Still per system outside the backend crates: the Debian
//! package names (`scripts/install-deps`, the image's `compose/servers/Dockerfile`). The
//! faults only one system takes (the clock-jump emulation, `redis-failover`) and the compose
//! generator's special cases (a start on the official image, a group announced through
//! another's list) are the systems' own, behind `System`. CONTRIBUTING's "Adding a system"
//! lists the files a new system touches.
#![deny(missing_docs)]

mod adapter;
mod backend;
mod election;
pub mod expiry;
pub mod keys;
mod load;
pub mod system;

pub use backend::{backend, backend_names, backends, parse_backend, recipe, recipes};
pub use expiry::{election_expiry, expiry, holder_pause, leader_pause};
pub use load::{knob_schemas, load_scenario};
pub use system::{
    SYSTEMS, addresses, check_endpoints, election_group_of, endpoint_groups, group_of,
    listed_groups, servers, system_named,
};

/// The knob table `K` of `scenario`, as a constructor error when it does not parse (the
/// election macro's way to read a recipe's knobs).
#[doc(hidden)]
pub fn knobs<K: lockbench_core::knobs::KnobTable>(
    scenario: &lockbench_core::Scenario,
) -> Result<K, lockbench_core::traits::BackendError> {
    let knobs = scenario.knobs.get::<K>();
    knobs.map_err(lockbench_core::traits::BackendError::Config)
}

// The election macro names the recipes through these paths, so a caller needs only this crate.
#[doc(hidden)]
pub use lockbench_core as core;
#[doc(hidden)]
pub use lockbench_etcd as etcd;
#[doc(hidden)]
pub use lockbench_postgres as postgres;
#[doc(hidden)]
pub use lockbench_redis as redis;
#[doc(hidden)]
pub use lockbench_zookeeper as zookeeper;
