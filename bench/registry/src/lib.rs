//! Every registered system and recipe, once: the systems ([`SYSTEMS`]), their lock recipes
//! ([`recipes`], built by name with [`backend`]), which servers a recipe runs on
//! ([`group_of`]), how long its dead holder's lock lives ([`expiry()`]), their election recipes
//! ([`elections`], built by name with [`elector`], on the servers [`election_group_of`] names,
//! a dead leader's term living [`election_expiry`]), and how a run's keys are kept apart from
//! another run's ([`keys`]).
//!
//! Why a crate of its own: the runner, the worker processes, `lockbench scale`, the chaos
//! nemeses, the resource sampler and the benches all need "which servers does `zk-fair` use"
//! and "build me a `zk-fair`". Each system's crate says that about its own recipes (a
//! `lockbench_core::Recipe` per recipe, listed by `System::recipes`); this crate lists the
//! systems once and answers by looking the recipe up. Adding a system is its line in
//! [`SYSTEMS`] (and the crate's dependency line); adding a recipe to a system touches
//! nothing here.
//!
//! Election recipes are registered the same way: a `lockbench_core::ElectionRecipe` per
//! recipe, listed by `System::elections`, looked up here by name ([`parse_election`],
//! [`election`]). The failover coordinator and the candidate worker processes build one as a
//! `lockbench_core::AnyElector`.
//!
//! A recipe is built as a `lockbench_core::AnyBackend`: the client loop is generic over the
//! backend but instantiated once, with one boxed future per lock call (timed by
//! `cargo bench -p lockbench --bench hot_paths -- lock_call`; see CONTRIBUTING, "Rules of
//! the code"). An earlier design, a constructor macro that expanded the caller's body once per
//! recipe, kept the set of recipes closed.
//!
//! The knob tables and key separation are the systems' too (`System::knobs`,
//! `System::separate_keys`), so [`knob_schemas`] and [`keys`] iterate over [`SYSTEMS`], and
//! [`load_scenario`] checks a scenario's recipe names, lock and election, against the
//! registered ones. Still per system outside the backend crates: the Debian package names
//! (`scripts/install-deps`, the image's `compose/servers/Dockerfile`). The faults only one
//! system takes (the clock-jump emulation, `redis-failover`) and the compose generator's
//! special cases (a start on the official image, a group announced through another's list)
//! are the systems' own, behind `System`. CONTRIBUTING's "Adding a system" lists the files a
//! new system touches.
#![deny(missing_docs)]

mod adapter;
mod backend;
mod election;
pub mod expiry;
pub mod keys;
mod load;
pub mod system;

pub use backend::{backend, backend_names, backends, parse_backend, recipe, recipes};
pub use election::{election, election_names, elections, elector, parse_election};
pub use expiry::{election_expiry, expiry, holder_pause, leader_pause};
pub use load::{knob_schemas, load_scenario};
pub use system::{
    SYSTEMS, addresses, check_endpoints, election_group_of, endpoint_groups, group_of,
    listed_groups, servers, system_named, system_of,
};
