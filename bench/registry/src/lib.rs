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
#![deny(missing_docs)]

mod backend;
mod election;
pub mod keys;
pub mod system;

pub use system::{addresses, check_endpoints, election_group_of, endpoint_groups, group_of};

// The macros name the recipes through these paths, so a caller needs only this crate.
#[doc(hidden)]
pub use lockbench_core as core;
#[doc(hidden)]
pub use lockbench_etcd as etcd;
#[doc(hidden)]
pub use lockbench_redis as redis;
#[doc(hidden)]
pub use lockbench_zookeeper as zookeeper;
