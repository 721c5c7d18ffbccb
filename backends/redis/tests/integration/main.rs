//! lockbench-redis's integration tests against real Redis servers, one test binary
//! (`redis`: the recipes' contract and counters; `herd`: notification fan-out; `secure`: TLS,
//! ACL users and the errors of a bad setting, on servers each test starts itself).
//!
//! Servers come from the managed cluster (`lockbench_cluster::for_tests`). For a quick loop
//! against servers started by hand, set `LOCKBENCH_TEST_REDIS=host:port` and
//! `LOCKBENCH_TEST_REDLOCK=host:port,...` instead.

mod herd;
mod redis;
mod secure;

use lockbench_core::Endpoints;
use tokio::sync::RwLock;

/// Tests that compare the server's `INFO commandstats` (server-wide) with one client's own
/// count take this for writing; every other test that sends commands holds it for reading.
/// (Under nextest every test is its own process and the `redis-commandstats` test group keeps
/// them apart instead; this covers `cargo test`, where they share one.)
pub static EXCLUSIVE: RwLock<()> = RwLock::const_new(());

/// The servers under test: `LOCKBENCH_TEST_REDIS`/`LOCKBENCH_TEST_REDLOCK` if both are set,
/// else the managed cluster.
pub async fn endpoints() -> Endpoints {
    match (
        std::env::var("LOCKBENCH_TEST_REDIS"),
        std::env::var("LOCKBENCH_TEST_REDLOCK"),
    ) {
        (Ok(redis), Ok(redlock)) => Endpoints::from_iter([
            (lockbench_redis::REDIS, vec![redis]),
            (
                lockbench_redis::REDLOCK,
                redlock.split(',').map(str::to_string).collect(),
            ),
        ]),
        _ => lockbench_cluster::for_tests().await,
    }
}
