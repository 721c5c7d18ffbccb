//! The ZooKeeper system's lock recipes, as `lockbench-registry` finds them (through
//! `System::recipes`): each one's name, servers, lock life and constructor.

use crate::system::ZOOKEEPER;
use crate::{Queue, ZkCurator, ZkFair, ZookeeperKnobs};
use lockbench_core::recipe::Build;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Recipe, Scenario};
use std::time::Duration;

/// zk-fair: ephemeral-sequential node, watch on the predecessor only.
pub const ZK_FAIR: BackendKind = BackendKind::of("zk-fair");
/// zk-curator: the `zookeeper-client` crate's Curator-compatible lock recipe.
pub const ZK_CURATOR: BackendKind = BackendKind::of("zk-curator");
/// zk-herd, deliberately naive: every waiter watches the lock directory's children, so a
/// release wakes all of them (the herd effect). Exists to measure fan-out against zk-fair.
pub const ZK_HERD: BackendKind = BackendKind::of("zk-herd");
/// zk-rwlock: the shared (read/write) lock from the recipes page.
pub const ZK_RWLOCK: BackendKind = BackendKind::of("zk-rwlock");
/// zk-broken-rwlock, deliberately broken: writers ignore read nodes. Exists to prove the
/// shared-lock checker catches it (with `workload.read_fraction` > 0).
pub const ZK_BROKEN_RWLOCK: BackendKind = BackendKind::of("zk-broken-rwlock");

/// A dead client's lock (and a dead leader's term) lives for its session timeout.
pub(crate) fn session_timeout(scenario: &Scenario) -> Duration {
    let knobs = knobs(scenario);
    knobs
        .expect("knobs are checked when a scenario is loaded")
        .session_timeout
}

pub(crate) fn knobs(scenario: &Scenario) -> Result<ZookeeperKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

fn build_queue(q: Queue, s: &Scenario, e: &Endpoints) -> Result<AnyBackend, BackendError> {
    let b = ZkFair::new(e, &knobs(s)?, s.workload.keys, s.seed)?.with_queue(q);
    Ok(AnyBackend::new(b))
}

const fn entry(kind: BackendKind, broken: bool, build: &'static Build) -> Recipe {
    Recipe {
        kind,
        group: ZOOKEEPER,
        expiry: &session_timeout,
        broken,
        build,
    }
}

/// The recipes, in the order comparisons list them.
pub static RECIPES: &[Recipe] = &[
    entry(ZK_FAIR, false, &|s, e| build_queue(Queue::FAIR, s, e)),
    entry(ZK_CURATOR, false, &|s, e| {
        let b = ZkCurator::new(e, &knobs(s)?, s.workload.keys, s.seed)?;
        Ok(AnyBackend::new(b))
    }),
    entry(ZK_HERD, false, &|s, e| build_queue(Queue::HERD, s, e)),
    entry(ZK_RWLOCK, false, &|s, e| build_queue(Queue::RWLOCK, s, e)),
    entry(ZK_BROKEN_RWLOCK, true, &|s, e| {
        build_queue(Queue::BROKEN_RWLOCK, s, e)
    }),
];
