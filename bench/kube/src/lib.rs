//! Kubernetes manifests for a run's remote workers: a Secret with the run's secret and an
//! Indexed Job of `lockbench worker --coordinator` pods, written from `k8s-openapi`'s typed API
//! structs.
//!
//! Why manifests and not a launcher: lockbench does not talk to a cluster's API. The user's
//! cluster, its credentials, registry and network policy are theirs; `kubectl apply -f` on a
//! file they can read is the interface every cluster has. Why typed structs rather than a
//! template: a field name misspelt or put at the wrong level in a template is YAML the API
//! server rejects at apply time, on the user's cluster; from `k8s-openapi`'s structs it does
//! not compile, and [`write::write`] reads every file back into those types.
//!
//! No cluster runs here. The tests check the objects' fields as read back from the written
//! YAML (and, where `kubectl` is installed, that its client-side dry run accepts them); they
//! cannot check that a cluster schedules the pods or that they reach the coordinator.
//!
//! **Build cost.** `k8s-openapi` compiles every type of the Kubernetes API, and its date
//! library `jiff` comes with it. Measured here (2 cores, load average 8-12, `cargo build
//! --timings`): in a debug build `k8s-openapi` 23-28 s and this crate 10-17 s; in a release
//! build, optimized, `k8s-openapi` 80 s and `jiff` 65 s, so the workspace builds both at
//! `opt-level = 0` without debug info in every profile (the root `Cargo.toml`): 38 s and 9 s.
//! They only serialize a few objects once per command.
//!
//! [`spec`] is what the user asks for and its checks, [`job`] the Indexed Job, [`secret`] the
//! Secret and namespace, [`manifests`] the objects as YAML and back, [`mod@write`] the output
//! directory, [`guide`] what to run next.
#![deny(missing_docs)]

pub mod guide;
pub mod job;
pub mod manifests;
pub mod secret;
pub mod spec;
pub mod write;

pub use manifests::Manifests;
pub use spec::{Resources, WorkerSpec};
