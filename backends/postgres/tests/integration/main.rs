//! lockbench-postgres's integration tests against real PostgreSQL servers, one test binary
//! (`servers`: the pair the managed cluster starts, its kill, pause and promote faults;
//! `recipes`: the conformance contract of each recipe and what a killed session means;
//! `server_side`: the servers' counters and the `pg_locks` observer).
//!
//! Servers come from the managed cluster (`lockbench_cluster::for_tests`, its `postgres`
//! group). For a quick loop against a server started by hand, set
//! `LOCKBENCH_TEST_POSTGRES=host:port[,host:port]` instead.
//!
//! Tests run concurrently on the same servers (with each other and with other crates' runs);
//! each uses a lock namespace of its own, which keeps their locks, their observers' views and
//! their statements' server counters apart.

mod recipes;
mod secure;
mod server_side;
mod servers;

use lockbench_core::Endpoints;
use lockbench_postgres::{POSTGRES, PgBackend, PgRecipe, PostgresKnobs};

/// The servers under test.
pub async fn endpoints() -> Endpoints {
    match std::env::var("LOCKBENCH_TEST_POSTGRES") {
        Ok(list) => {
            Endpoints::from_iter([(POSTGRES, list.split(',').map(str::to_string).collect())])
        }
        Err(_) => lockbench_cluster::for_tests().await,
    }
}

/// Knobs with a namespace of the test's own.
pub fn knobs(namespace: i32) -> PostgresKnobs {
    PostgresKnobs {
        namespace,
        ..PostgresKnobs::default()
    }
}

/// `recipe` on the servers under test with `knobs`.
pub async fn backend(recipe: PgRecipe, knobs: &PostgresKnobs) -> PgBackend {
    PgBackend::new(recipe, &endpoints().await, knobs, 42).unwrap()
}

/// An administrator's session on the primary (to terminate a client's session, say).
pub async fn admin() -> tokio_postgres::Client {
    let endpoints = endpoints().await;
    let list = endpoints.get(POSTGRES);
    let (hosts, ports): (Vec<&str>, Vec<&str>) =
        list.iter().map(|a| a.rsplit_once(':').unwrap()).unzip();
    let k = PostgresKnobs::default();
    let conf = format!(
        "host={} port={} user={} dbname={} application_name=lockbench-test-admin \
         target_session_attrs=read-write",
        hosts.join(","),
        ports.join(","),
        k.user,
        k.dbname
    );
    let (client, connection) = tokio_postgres::connect(&conf, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("admin session on {list:?}: {e}"));
    tokio::spawn(connection);
    client
}
