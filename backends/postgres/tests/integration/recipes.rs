//! Each recipe against the conformance contract, and what a session the server ended means
//! for its holder.

use crate::{admin, backend, knobs};
use lockbench_conformance as conformance;
use lockbench_core::{Backend, ClientId, ErrorKind, KeyId, LockClient, Outcome};
use lockbench_postgres::{PgBackend, PgRecipe, application_name};
use std::time::{Duration, Instant};

/// Each test's namespace: the recipe's index * 100 + the test's number, far from the default.
fn ns(recipe: PgRecipe, test: i32) -> i32 {
    let r = PgRecipe::ALL.iter().position(|x| *x == recipe).unwrap() as i32;
    9_000 + r * 100 + test
}

async fn each(test: i32, f: impl AsyncFn(PgBackend)) {
    for recipe in PgRecipe::ALL {
        f(backend(recipe, &knobs(ns(recipe, test))).await).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_acquire_release_and_tokens_grow() {
    each(1, async |b| {
        conformance::acquire_release_and_tokens_grow(&b).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_mutual_exclusion() {
    each(2, async |b| conformance::mutual_exclusion(&b, 8, 25).await).await;
}

/// A killed holder's socket closes and the server ends its session at once: the lock is
/// free without waiting for any expiry (so `expiry` here is zero, with seconds of margin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_dead_holders_lock_is_taken_over() {
    each(3, async |b| {
        conformance::dead_holders_lock_is_taken_over(&b, Duration::ZERO, Duration::from_secs(5))
            .await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_unreachable_fails_fast() {
    let endpoints = lockbench_core::Endpoints::from_iter([(
        lockbench_postgres::POSTGRES,
        vec!["127.0.0.1:1".to_string()],
    )]);
    for recipe in PgRecipe::ALL {
        let b = PgBackend::new(recipe, &endpoints, &knobs(ns(recipe, 4)), 1).unwrap();
        conformance::unreachable_fails_fast(&b, "127.0.0.1:1", Duration::from_secs(3)).await;
    }
}

/// The server ends a holder's session (`pg_terminate_backend`, as an administrator or a
/// failover would): its renew and release say `lock-lost`, and another client gets the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_terminated_holder_learns_lock_lost() {
    let admin = admin().await;
    each(5, async |b| {
        let name = b.info().backend;
        let recipe = b.recipe();
        let holder_id = ClientId(50 + ns(recipe, 5) as u32 % 100);
        let mut holder = b.connect(holder_id).await.unwrap();
        let mut other = b.connect(ClientId(1)).await.unwrap();
        let Outcome::Ok(grant) = holder.acquire(KeyId(3)).await else {
            panic!("{recipe}: holder acquire")
        };
        assert!(
            holder.renew(&grant).await.is_ok(),
            "{recipe}: renew while held"
        );
        let killed = admin
            .query_one(
                "SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a \
                 JOIN pg_locks l ON l.pid = a.pid WHERE a.application_name = $1 \
                 AND l.locktype = 'advisory' AND l.classid = $2::int4::oid",
                &[&application_name(holder_id), &ns(recipe, 5)],
            )
            .await
            .unwrap()
            .get::<_, i64>(0);
        assert_eq!(killed, 1, "{recipe}: the holder's one session terminated");
        let started = Instant::now();
        let taken = tokio::time::timeout(Duration::from_secs(10), other.acquire(KeyId(3))).await;
        let Ok(Outcome::Ok(taken)) = taken else {
            panic!("{name}: lock of a terminated session not granted: {taken:?}")
        };
        assert!(started.elapsed() < Duration::from_secs(10));
        let renewed = holder.renew(&grant).await;
        assert!(
            matches!(renewed, Outcome::Fail(ErrorKind::LockLost)),
            "{recipe}: renew after the session was terminated: {renewed:?}"
        );
        let released = holder.release(grant).await;
        assert!(
            matches!(released, Outcome::Fail(ErrorKind::LockLost)),
            "{recipe}: release after the session was terminated: {released:?}"
        );
        // The holder's next acquire opens a new session and works.
        assert!(other.release(taken).await.is_ok());
        let Outcome::Ok(again) = holder.acquire(KeyId(3)).await else {
            panic!("{recipe}: acquire on a new session")
        };
        assert!(holder.release(again).await.is_ok());
        holder.close().await;
        other.close().await;
    })
    .await;
}

/// A waiter on a held lock gives up at `lock_timeout` with a definite `fail timeout`; the
/// polling recipe has no `lock_timeout` and is left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_lock_timeout_fails_the_acquire() {
    for recipe in [PgRecipe::Advisory, PgRecipe::Xact] {
        let mut k = knobs(ns(recipe, 6));
        k.lock_timeout = Duration::from_millis(300);
        let b = backend(recipe, &k).await;
        let mut holder = b.connect(ClientId(0)).await.unwrap();
        let mut waiter = b.connect(ClientId(1)).await.unwrap();
        let Outcome::Ok(grant) = holder.acquire(KeyId(0)).await else {
            panic!("{recipe}: holder acquire")
        };
        let started = Instant::now();
        assert_eq!(
            waiter.acquire(KeyId(0)).await.error(),
            Some(ErrorKind::Timeout),
            "{recipe}: waiter on a held lock"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(holder.release(grant).await.is_ok());
        // The waiter's session is still usable (the xact recipe rolled back).
        let Outcome::Ok(g) = waiter.acquire(KeyId(0)).await else {
            panic!("{recipe}: waiter after the release")
        };
        assert!(waiter.release(g).await.is_ok());
        holder.close().await;
        waiter.close().await;
    }
}

/// Releasing a lock the session does not hold says `lock-lost` (pg_advisory_unlock's false).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_double_release_is_lock_lost() {
    for recipe in [PgRecipe::Advisory, PgRecipe::TryAdvisory] {
        let b = backend(recipe, &knobs(ns(recipe, 7))).await;
        let mut c = b.connect(ClientId(0)).await.unwrap();
        let Outcome::Ok(g) = c.acquire(KeyId(1)).await else {
            panic!("{recipe}: acquire")
        };
        let copy = lockbench_core::Grant {
            key: g.key,
            token: g.token,
            handle: lockbench_postgres::PgHandle {
                session: g.handle.session,
                objid: g.handle.objid,
            },
        };
        assert!(c.release(g).await.is_ok());
        let again = c.release(copy).await;
        assert!(
            matches!(again, Outcome::Fail(ErrorKind::LockLost)),
            "{recipe}: second release: {again:?}"
        );
        c.close().await;
    }
}

/// `pg-try-advisory` counts each poll as a wake-up: every one a request, all but the last
/// (which took the lock) wasted. The blocking recipes have no client-side count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_polling_counts_its_wakeups() {
    let b = backend(PgRecipe::TryAdvisory, &knobs(ns(PgRecipe::TryAdvisory, 8))).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let mut waiter = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(g) = holder.acquire(KeyId(0)).await else {
        panic!("holder acquire")
    };
    let before = b.wakeups().unwrap();
    let wait = tokio::spawn(async move {
        let got = waiter.acquire(KeyId(0)).await;
        (waiter, got)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(holder.release(g).await.is_ok());
    let (mut waiter, got) = wait.await.unwrap();
    let Outcome::Ok(g) = got else {
        panic!("waiter: {got:?}")
    };
    let w = b.wakeups().unwrap().since(before);
    assert!(
        w.notifications >= 2,
        "polled only {} times in 300 ms",
        w.notifications
    );
    assert_eq!(w.requests, w.notifications);
    assert_eq!(w.wasted, w.notifications - 1);
    assert!(waiter.release(g).await.is_ok());
    for recipe in [PgRecipe::Advisory, PgRecipe::Xact] {
        assert!(
            backend(recipe, &knobs(ns(recipe, 8)))
                .await
                .wakeups()
                .is_none()
        );
    }
    holder.close().await;
    waiter.close().await;
}
