//! Each recipe against the conformance contract, and what a session the server ended means
//! for its holder.

use crate::{backend, knobs};
use lockbench_conformance as conformance;
use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome};
use lockbench_mariadb::{MariaBackend, MariaRecipe};
use std::time::{Duration, Instant};

async fn each(test: &str, f: impl AsyncFn(MariaBackend)) {
    for recipe in MariaRecipe::ALL {
        f(backend(recipe, &knobs(&format!("{recipe}-{test}"))).await).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_acquire_release_and_tokens_grow() {
    each("grow", async |b| {
        conformance::acquire_release_and_tokens_grow(&b).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_mutual_exclusion() {
    each("mutex", async |b| {
        conformance::mutual_exclusion(&b, 8, 25).await
    })
    .await;
}

/// A killed holder's socket closes and the server ends its session at once: the lock is
/// free without waiting for `wait_timeout` (so `expiry` here is zero, with seconds of margin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_dead_holders_lock_is_taken_over() {
    each("dead", async |b| {
        conformance::dead_holders_lock_is_taken_over(&b, Duration::ZERO, Duration::from_secs(5))
            .await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_unreachable_fails_fast() {
    let endpoints = lockbench_core::Endpoints::from_iter([(
        lockbench_mariadb::MARIADB,
        vec!["127.0.0.1:1".to_string()],
    )]);
    for recipe in MariaRecipe::ALL {
        let b = MariaBackend::new(recipe, &endpoints, &knobs("unreachable"), 1).unwrap();
        conformance::unreachable_fails_fast(&b, "127.0.0.1:1", Duration::from_secs(3)).await;
    }
}

/// A silent holder's session ends `wait_timeout` after its last statement, and its lock
/// with it: another client gets the lock after about that long, not before, while the holder
/// still has its grant (the lease-like loss the docs describe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_a_silent_holders_lock_ends_with_its_session() {
    each("silent", async |b| {
        let recipe = b.recipe();
        let mut k = knobs(&format!("{recipe}-silent"));
        k.wait_timeout = Duration::from_secs(1);
        k.lock_timeout = Duration::from_secs(8);
        let b = crate::backend(recipe, &k).await;
        let mut holder = b.connect(ClientId(1)).await.unwrap();
        let mut other = b.connect(ClientId(2)).await.unwrap();
        let Outcome::Ok(_grant) = holder.acquire(KeyId(0)).await else {
            panic!("{recipe}: holder acquire")
        };
        let started = Instant::now();
        let Outcome::Ok(g) = other.acquire(KeyId(0)).await else {
            panic!("{recipe}: the other client never got the silent holder's lock")
        };
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(7),
            "{recipe}: the lock passed after {waited:?}, wait_timeout is 1 s"
        );
        assert!(other.release(g).await.is_ok());
        other.close().await;
        holder.abandon().await;
    })
    .await;
}
