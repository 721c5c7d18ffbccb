//! lockbench-mariadb's integration tests against real MariaDB servers, one test binary
//! (`recipes`: the conformance contract of each recipe and what an ended session means;
//! `server_side`: the servers' counters and the observer; `servers`: a private pair under the
//! server nemesis (kill, pause, promote); `secure`: a server of its own that
//! takes only TLS and passwords, and what each misconfiguration says).
//!
//! Servers come from the managed cluster (`lockbench_cluster::for_tests`, its `mariadb`
//! group). For a quick loop against servers started by hand, set
//! `LOCKBENCH_TEST_MARIADB=host:port[,host:port]` instead.
//!
//! Tests run concurrently on the same servers; each uses lock names of its own (a prefix),
//! which keeps their locks, their observers' views and their statements' counters apart.

mod recipes;
mod secure;
mod server_side;
mod servers;

use lockbench_core::Endpoints;
use lockbench_mariadb::{MARIADB, MariaBackend, MariaRecipe, MariadbKnobs};

/// The servers under test.
pub async fn endpoints() -> Endpoints {
    match std::env::var("LOCKBENCH_TEST_MARIADB") {
        Ok(list) => {
            Endpoints::from_iter([(MARIADB, list.split(',').map(str::to_string).collect())])
        }
        Err(_) => lockbench_cluster::for_tests().await,
    }
}

/// Knobs with lock names of the test's own.
pub fn knobs(prefix: &str) -> MariadbKnobs {
    MariadbKnobs {
        prefix: format!("lbtest-{prefix}"),
        ..MariadbKnobs::default()
    }
}

/// `recipe` on the servers under test with `knobs`.
pub async fn backend(recipe: MariaRecipe, knobs: &MariadbKnobs) -> MariaBackend {
    MariaBackend::new(recipe, &endpoints().await, knobs, 42).unwrap()
}
