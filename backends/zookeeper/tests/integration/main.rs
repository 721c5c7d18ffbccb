//! lockbench-zookeeper's integration tests against the managed ZooKeeper ensemble
//! (`lockbench_cluster::for_tests`), one test binary: `zookeeper` (zk-fair and zk-curator:
//! the contract, sessions, request counts) and `herd` (notification fan-out).
//!
//! Every test uses its own `root` ([`knobs`]), so tests running at the same time never share a
//! lock key.

mod herd;
mod secure;
mod standalone;
mod tls;
mod zookeeper;

use lockbench_core::Endpoints;
use lockbench_zookeeper::ZookeeperKnobs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where every test's lock roots live.
const TEST_ROOT: &str = "/lockbench-test";

pub async fn endpoints() -> Endpoints {
    lockbench_cluster::for_tests().await
}

/// Knobs with a root no other test (or earlier run) uses.
pub fn knobs(test: &str, session_timeout: Duration) -> ZookeeperKnobs {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    ZookeeperKnobs {
        session_timeout,
        root: format!("{TEST_ROOT}/{test}-{}-{nanos}", std::process::id()),
    }
}
