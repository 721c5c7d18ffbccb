//! lockbench-redis against real Redis servers: the conformance contract for `redis-setnx`,
//! `redis-pubsub` and `redlock`, proof that `redis-broken-nonx` is broken, Redlock's quorum rules, and the
//! server-side request counter.
//!
//! Servers come from [`endpoints`]. Tests run concurrently against the same servers, so each
//! uses its own key prefix; the counter tests, which need the servers to themselves, take
//! [`EXCLUSIVE`] for writing while every other test holds it for reading.

use crate::{EXCLUSIVE, endpoints};
use lockbench_conformance as conformance;
use lockbench_core::traits::BackendError;
use lockbench_core::{Backend, ClientId, Endpoints, ErrorKind, KeyId, LockClient, Outcome};
use lockbench_redis::{RedisKnobs, RedlockKnobs};
use lockbench_redis::{RedlockBackend, SetMode, SetNxBackend};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const KEYS: u32 = 16;
const SEED: u64 = 42;
const UNREACHABLE: &str = "127.0.0.1:1";

fn redis_knobs(test: &str, ttl: Duration) -> RedisKnobs {
    RedisKnobs {
        ttl,
        prefix: format!("lockbench-test:{test}:"),
        ..RedisKnobs::default()
    }
}

fn redlock_knobs(test: &str, ttl: Duration) -> RedlockKnobs {
    RedlockKnobs {
        ttl,
        prefix: format!("lockbench-test:{test}:"),
        ..RedlockKnobs::default()
    }
}

async fn setnx(test: &str, ttl: Duration, mode: SetMode) -> SetNxBackend {
    SetNxBackend::new(
        &endpoints().await,
        &redis_knobs(test, ttl),
        KEYS,
        SEED,
        mode,
    )
    .unwrap()
}

async fn redlock(test: &str, ttl: Duration) -> RedlockBackend {
    RedlockBackend::new(&endpoints().await, &redlock_knobs(test, ttl), KEYS, SEED).unwrap()
}

const TTL: Duration = Duration::from_secs(10);

// ---- redis-setnx ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_acquire_release_and_tokens_grow() {
    let _shared = EXCLUSIVE.read().await;
    let b = setnx("setnx-arr", TTL, SetMode::Nx).await;
    conformance::acquire_release_and_tokens_grow(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_mutual_exclusion() {
    let _shared = EXCLUSIVE.read().await;
    let b = setnx("setnx-mutex", TTL, SetMode::Nx).await;
    conformance::mutual_exclusion(&b, 8, 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_dead_holders_lock_is_taken_over() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_secs(1);
    let b = setnx("setnx-dead", ttl, SetMode::Nx).await;
    conformance::dead_holders_lock_is_taken_over(&b, ttl, Duration::from_millis(700)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_release_after_expiry_reports_lock_lost() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_millis(300);
    let b = setnx("setnx-expiry", ttl, SetMode::Nx).await;
    conformance::release_after_expiry_reports_lock_lost(&b, ttl + Duration::from_millis(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_unreachable_fails_fast() {
    let endpoints = Endpoints::from_iter([(lockbench_redis::REDIS, vec![UNREACHABLE.into()])]);
    let knobs = redis_knobs("setnx-unreachable", TTL);
    let b = SetNxBackend::new(&endpoints, &knobs, KEYS, SEED, SetMode::Nx).unwrap();
    conformance::unreachable_fails_fast(&b, UNREACHABLE, Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_renew_keeps_the_lock_past_its_first_ttl() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_millis(400);
    let b = setnx("setnx-renew", ttl, SetMode::Nx).await;
    let mut c = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(3)).await else {
        panic!("acquire")
    };
    for _ in 0..4 {
        tokio::time::sleep(ttl / 2).await;
        assert!(c.renew(&g).await.is_ok(), "renew of a held lock");
    }
    // 800 ms after the grant, twice its TTL: only the renewals kept it.
    assert!(c.release(g).await.is_ok(), "release after renewals");
    c.close().await;
}

#[test]
fn missing_endpoints_are_named() {
    let none = Endpoints::default();
    match SetNxBackend::new(&none, &RedisKnobs::default(), 1, 1, SetMode::Nx) {
        Err(BackendError::Config(msg)) => assert!(msg.contains("endpoints.redis"), "{msg}"),
        other => panic!("expected a config error, got {other:?}"),
    }
    match RedlockBackend::new(&none, &RedlockKnobs::default(), 1, 1) {
        Err(BackendError::Config(msg)) => assert!(msg.contains("endpoints.redlock"), "{msg}"),
        other => panic!("expected a config error, got {other:?}"),
    }
}

// ---- redis-broken-nonx ----

/// Regression guard for the checkers' premise: without `NX`, clients on one key overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_nonx_clients_overlap() {
    let _shared = EXCLUSIVE.read().await;
    let b = setnx("broken-nonx", TTL, SetMode::BrokenNoNx).await;
    assert_eq!(b.info().backend.name(), "redis-broken-nonx");
    let held = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for id in 0..8 {
        let mut client = b.connect(ClientId(id)).await.unwrap();
        let (held, overlaps) = (held.clone(), overlaps.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                let Outcome::Ok(grant) = client.acquire(KeyId(0)).await else {
                    panic!("broken acquire never refuses")
                };
                if held.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                held.store(false, Ordering::SeqCst);
                // Someone else may have overwritten our value: lock-lost is expected here.
                let _ = client.release(grant).await;
            }
            client.close().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n = overlaps.load(Ordering::SeqCst);
    assert!(
        n > 0,
        "redis-broken-nonx excluded everyone: 0 overlaps in 200 holds"
    );
}

// ---- redis-broken-release ----

/// The release checker's premise: a holder whose lock expired and went to
/// another client releases it. redis-setnx's compare-and-delete refuses (`lock-lost`) and the
/// new holder keeps its lock; redis-broken-release's plain `DEL` reports success and deletes
/// the new holder's lock, so a third client is granted it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_del_release_deletes_the_next_holders_lock_and_says_ok() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_millis(200);
    for (mode, name) in [
        (SetMode::Nx, "redis-setnx"),
        (SetMode::BrokenRelease, "redis-broken-release"),
    ] {
        let b = setnx(&format!("release-{name}"), ttl, mode).await;
        assert_eq!(b.info().backend.name(), name);
        let mut c = Vec::new();
        for id in 0..3 {
            c.push(b.connect(ClientId(id)).await.unwrap());
        }
        let Outcome::Ok(old) = c[0].acquire(KeyId(0)).await else {
            panic!("{name}: first acquire")
        };
        tokio::time::sleep(ttl * 2).await; // the lock expires while client 0 "holds" it
        let Outcome::Ok(_new) = c[1].acquire(KeyId(0)).await else {
            panic!("{name}: second acquire")
        };
        let released = c[0].release(old).await;
        let third = tokio::time::timeout(Duration::from_millis(50), c[2].acquire(KeyId(0))).await;
        match mode {
            SetMode::Nx => {
                assert!(
                    matches!(released, Outcome::Fail(ErrorKind::LockLost)),
                    "{name}: {released:?}"
                );
                assert!(third.is_err(), "{name}: client 1's lock was taken from it");
            }
            _ => {
                assert!(released.is_ok(), "{name}: {released:?}");
                assert!(
                    matches!(third, Ok(Outcome::Ok(_))),
                    "{name}: client 1 still held the lock after client 0's DEL"
                );
            }
        }
        for client in c {
            client.close().await;
        }
    }
}

// ---- redlock ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_acquire_release_and_no_tokens() {
    let _shared = EXCLUSIVE.read().await;
    let b = redlock("redlock-arr", TTL).await;
    assert_eq!(b.info().fencing, "none: Redlock has no fencing token");
    conformance::acquire_release_and_tokens_grow(&b).await;
    let mut c = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(2)).await else {
        panic!("acquire")
    };
    assert_eq!(g.token, None, "Redlock must not invent a fencing token");
    assert!(c.release(g).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_mutual_exclusion() {
    let _shared = EXCLUSIVE.read().await;
    let b = redlock("redlock-mutex", TTL).await;
    conformance::mutual_exclusion(&b, 8, 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_dead_holders_lock_is_taken_over() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_secs(1);
    let b = redlock("redlock-dead", ttl).await;
    conformance::dead_holders_lock_is_taken_over(&b, ttl, Duration::from_millis(700)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_release_after_expiry_reports_lock_lost() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_millis(300);
    let b = redlock("redlock-expiry", ttl).await;
    conformance::release_after_expiry_reports_lock_lost(&b, ttl + Duration::from_millis(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_unreachable_fails_fast() {
    let endpoints = Endpoints::from_iter([(lockbench_redis::REDLOCK, vec![UNREACHABLE.into()])]);
    let knobs = redlock_knobs("redlock-unreachable", TTL);
    let b = RedlockBackend::new(&endpoints, &knobs, KEYS, SEED).unwrap();
    conformance::unreachable_fails_fast(&b, UNREACHABLE, Duration::from_secs(3)).await;
}

/// The first `bogus` of five Redlock servers replaced by closed ports.
async fn redlock_with_bogus(test: &str, bogus: usize) -> RedlockBackend {
    let mut e = endpoints().await;
    let redlock = e
        .get_mut(lockbench_redis::REDLOCK)
        .expect("Redlock servers");
    assert!(redlock.len() >= 5, "need five Redlock servers: {redlock:?}");
    redlock.truncate(5);
    for (i, addr) in redlock.iter_mut().take(bogus).enumerate() {
        *addr = format!("127.0.0.1:{}", i + 1);
    }
    RedlockBackend::new(&e, &redlock_knobs(test, TTL), KEYS, SEED).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_grants_with_two_of_five_servers_unreachable() {
    let _shared = EXCLUSIVE.read().await;
    let b = redlock_with_bogus("redlock-two-down", 2).await;
    assert_eq!(b.quorum(), 3);
    let mut c = b
        .connect(ClientId(0))
        .await
        .expect("connect with 3 of 5 up");
    for _ in 0..3 {
        let g = match c.acquire(KeyId(4)).await {
            Outcome::Ok(g) => g,
            other => panic!("acquire with 3 of 5 servers up: {other:?}"),
        };
        assert!(c.renew(&g).await.is_ok(), "renew with 3 of 5 up");
        assert!(c.release(g).await.is_ok(), "release with 3 of 5 up");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_fails_no_quorum_with_three_of_five_servers_unreachable() {
    let _shared = EXCLUSIVE.read().await;
    let b = redlock_with_bogus("redlock-three-down", 3).await;
    let mut c = b
        .connect(ClientId(0))
        .await
        .expect("connect with 2 of 5 up");
    let started = Instant::now();
    match tokio::time::timeout(Duration::from_secs(5), c.acquire(KeyId(4))).await {
        Ok(Outcome::Fail(ErrorKind::NoQuorum)) => {}
        other => panic!("acquire with 2 of 5 servers up: expected fail no-quorum, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "gave up only after {:?}",
        started.elapsed()
    );
    // The failed attempts took their value back: another client with all five servers gets
    // the lock at once rather than after the TTL.
    let all = redlock("redlock-three-down", TTL).await;
    let mut other = all.connect(ClientId(1)).await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(2), other.acquire(KeyId(4)))
        .await
        .expect("lock left behind by a failed acquire");
    let Outcome::Ok(g) = g else { panic!("{g:?}") };
    assert!(other.release(g).await.is_ok());
}

// ---- redis-pubsub (the same lock, waiters notified by pub/sub) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_conformance() {
    let _shared = EXCLUSIVE.read().await;
    let b = setnx("pubsub-arr", TTL, SetMode::Nx).await.with_pubsub();
    conformance::acquire_release_and_tokens_grow(&b).await;
    let b = setnx("pubsub-mutex", TTL, SetMode::Nx).await.with_pubsub();
    conformance::mutual_exclusion(&b, 8, 25).await;
    // A lock that expires announces nothing: the waiter's fallback attempt takes it over.
    let ttl = Duration::from_secs(1);
    let b = setnx("pubsub-dead", ttl, SetMode::Nx).await.with_pubsub();
    conformance::dead_holders_lock_is_taken_over(&b, ttl, Duration::from_millis(700)).await;
    let b = setnx("pubsub-expiry", Duration::from_millis(50), SetMode::Nx)
        .await
        .with_pubsub();
    conformance::release_after_expiry_reports_lock_lost(&b, Duration::from_millis(70)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_server_counter_equals_requests_sent() {
    let e = endpoints().await;
    let b = setnx("pubsub-counters", TTL, SetMode::Nx)
        .await
        .with_pubsub();
    counters_match(&b, &e.get(lockbench_redis::REDIS)[..1], 20).await;
}

// ---- server counters ----

/// Runs `rounds` acquire/renew/release cycles on one client (after making the server forget
/// its scripts, so the `NOSCRIPT` → `SCRIPT LOAD` path is counted too) and checks the server's
/// counter moved by exactly the client's `requests_sent`.
async fn counters_match<B: Backend>(b: &B, servers: &[String], rounds: u32) {
    let _alone = EXCLUSIVE.write().await;
    for s in servers {
        let client = redis::Client::open(format!("redis://{s}")).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let name = b.info().backend;
    let before = b.server_counters().await.unwrap();
    let mut c = b.connect(ClientId(0)).await.unwrap();
    for round in 0..rounds {
        let Outcome::Ok(g) = c.acquire(KeyId(round % 3)).await else {
            panic!("{name}: acquire")
        };
        assert!(c.renew(&g).await.is_ok());
        assert!(c.release(g).await.is_ok());
    }
    let sent = c.requests_sent().unwrap();
    c.close().await;
    let after = b.server_counters().await.unwrap();
    let counted = after.requests - before.requests;
    assert_eq!(
        counted, sent,
        "{name}: servers counted {counted}, client sent {sent} ({})",
        after.source
    );
    assert!(
        sent >= u64::from(rounds) * 3,
        "{name}: {sent} requests for {rounds} rounds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_server_counter_equals_requests_sent() {
    let e = endpoints().await;
    let b = setnx("setnx-counters", TTL, SetMode::Nx).await;
    counters_match(&b, &e.get(lockbench_redis::REDIS)[..1], 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_server_counter_equals_requests_sent() {
    let e = endpoints().await;
    let b = redlock("redlock-counters", TTL).await;
    counters_match(&b, e.get(lockbench_redis::REDLOCK), 20).await;
}

/// redis-lease-election: a resign deletes the key, so a polling candidate leads within about
/// one poll interval, well inside the key's TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_resign_hands_over_quickly() {
    let _shared = EXCLUSIVE.read().await;
    let ttl = Duration::from_secs(10);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let e = lockbench_redis::RedisLeaseElection::new(
        &endpoints().await,
        &redis_knobs("election", ttl),
        Duration::from_millis(20),
        &format!("resign-{nanos}"),
    )
    .expect("redis-lease-election");
    conformance::election::resign_hands_over(&e, ttl).await;
}
