//! lockbench-etcd's integration tests against the managed etcd cluster
//! (`lockbench_cluster::for_tests`), one test binary: `etcd` (the contract and etcd's own
//! properties), `herd` (notification fan-out) and `synced_watch` (the unsynced-watch race).

mod etcd;
mod herd;
mod secure;
mod synced_watch;

use lockbench_core::Endpoints;
use lockbench_etcd::EtcdKnobs;
use std::time::Duration;

pub async fn cluster() -> Endpoints {
    lockbench_cluster::for_tests().await
}

/// Knobs on a prefix of test `test` and this process alone (tests run concurrently on one
/// cluster).
pub fn knobs(test: &str, lease_ttl: Duration) -> EtcdKnobs {
    EtcdKnobs {
        lease_ttl,
        prefix: format!("/lockbench-test/{test}/{}", std::process::id()),
    }
}
