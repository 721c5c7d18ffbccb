//! lockbench-nats's integration tests against the real three-server JetStream cluster, one
//! test binary (`servers`: the cluster the managed cluster starts, its probes; `recipes`: the
//! conformance contract and what the bucket's max age means for a holder; `server_side`: the
//! servers' counters and the observer; `race`: which compare-and-set of nats-server 2.9 holds
//! under concurrent writers, the one the recipe is built on; `faults`: a private cluster of
//! three whose bucket leader is paused and killed by the server nemesis; `secure`: servers of its
//! own that take only TLS and passwords, and what each misconfiguration says).
//!
//! Servers come from the managed cluster (`lockbench_cluster::for_tests`, its `nats` group).
//!
//! Tests run concurrently on the same servers (with each other and with other crates' runs);
//! each uses a key prefix of its own, which keeps their locks, their observers' views and
//! their connections' counters apart.

mod faults;
mod race;
mod recipes;
mod secure;
mod server_side;
mod servers;

use lockbench_core::Endpoints;
use lockbench_nats::{NATS, NatsBackend, NatsKnobs};
use std::time::Duration;

/// The servers under test.
pub async fn endpoints() -> Endpoints {
    lockbench_cluster::for_tests().await
}

/// Knobs with a bucket of the test's own (tests run at the same time with different `ttl`s,
/// the bucket's `max_age`), a key prefix unique per process (a test run again does not meet
/// the entries its last run left) and `ttl`.
pub fn knobs(test: &str, ttl: Duration) -> NatsKnobs {
    let pid = std::process::id();
    NatsKnobs {
        bucket: format!("test-{test}"),
        prefix: format!("p{pid}"),
        ttl,
        ..NatsKnobs::default()
    }
}

/// The recipe on the servers under test with `knobs`.
pub async fn backend(knobs: &NatsKnobs) -> NatsBackend {
    NatsBackend::new(&endpoints().await, knobs).unwrap()
}

/// The client addresses of the `nats` group.
pub async fn addresses() -> Vec<String> {
    endpoints().await.get(NATS).to_vec()
}
