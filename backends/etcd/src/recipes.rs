//! The etcd system's lock recipes, as `lockbench-registry` finds them (through
//! `System::recipes`): each one's name, servers, lock life and constructor.

use crate::system::ETCD;
use crate::{EtcdBackend, EtcdKnobs};
use lockbench_core::recipe::Build;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Recipe, Scenario};
use std::time::Duration;

/// etcd-lease: lease + keep-alive, wait for the key with the next lower create revision.
pub const ETCD_LEASE: BackendKind = BackendKind::of("etcd-lease");
/// etcd-lockapi: the server-side v3 Lock API, on the same kind of lease.
pub const ETCD_LOCKAPI: BackendKind = BackendKind::of("etcd-lockapi");
/// etcd-herd, deliberately naive: every waiter watches the whole lock prefix, so a release
/// wakes every waiter. Exists to measure fan-out against etcd-lease.
pub const ETCD_HERD: BackendKind = BackendKind::of("etcd-herd");

pub(crate) fn knobs(scenario: &Scenario) -> Result<EtcdKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

/// A dead client's lock (and a dead leader's term) lives for its lease TTL.
pub(crate) fn lease_ttl(scenario: &Scenario) -> Duration {
    let knobs = knobs(scenario);
    knobs
        .expect("knobs are checked when a scenario is loaded")
        .lease_ttl
}

fn build(kind: BackendKind, s: &Scenario, e: &Endpoints) -> Result<AnyBackend, BackendError> {
    let b = EtcdBackend::new(kind, e, &knobs(s)?, s.workload.keys, s.seed)?;
    Ok(AnyBackend::new(b))
}

const fn entry(kind: BackendKind, build: &'static Build) -> Recipe {
    Recipe {
        kind,
        group: ETCD,
        expiry: &lease_ttl,
        broken: false,
        build,
    }
}

/// The recipes, in the order comparisons list them.
pub static RECIPES: &[Recipe] = &[
    entry(ETCD_LEASE, &|s, e| build(ETCD_LEASE, s, e)),
    entry(ETCD_LOCKAPI, &|s, e| build(ETCD_LOCKAPI, s, e)),
    entry(ETCD_HERD, &|s, e| build(ETCD_HERD, s, e)),
];
