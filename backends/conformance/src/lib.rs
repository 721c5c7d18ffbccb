//! The contract every lock backend must meet, written once and run by each backend crate's
//! integration tests against its real servers.
//!
//! Each function takes a [`Backend`] and panics with a message naming the backend when the
//! contract is broken, so a backend test is one line per property:
//! `conformance::acquire_release_and_tokens_grow(&backend).await`. Keeping the properties here
//! (rather than copied into each backend crate) means every recipe is held to the same
//! definition of "works".
//!
//! [`election`] does the same for leader-election recipes.
#![deny(missing_docs)]

pub mod election;
pub mod fanout;
pub mod faults;
pub mod secure;

use lockbench_core::{Backend, ClientId, ErrorKind, KeyId, LockClient, Outcome};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

async fn connect<B: Backend>(backend: &B, id: u32) -> B::Client {
    match backend.connect(ClientId(id)).await {
        Ok(c) => c,
        Err(e) => panic!("{}: connect client {id}: {e}", backend.info().backend),
    }
}

/// One client acquires and releases the same key several times; each grant's fencing token
/// (when the recipe has tokens) is strictly greater than the previous one, and a second key is
/// independent of the first.
pub async fn acquire_release_and_tokens_grow<B: Backend>(backend: &B) {
    let name = backend.info().backend;
    let mut client = connect(backend, 0).await;
    let mut last = None;
    for round in 0..5 {
        let grant = match client.acquire(KeyId(0)).await {
            Outcome::Ok(g) => g,
            other => panic!("{name}: acquire round {round}: {other:?}"),
        };
        if let (Some(prev), Some(now)) = (last, grant.token) {
            assert!(
                now > prev,
                "{name}: token {now:?} after {prev:?} does not grow"
            );
        }
        last = grant.token.or(last);
        let renewed = client.renew(&grant).await;
        assert!(renewed.is_ok(), "{name}: renew of a held lock: {renewed:?}");
        let released = client.release(grant).await;
        assert!(
            released.is_ok(),
            "{name}: release round {round}: {released:?}"
        );
    }
    let other = client.acquire(KeyId(1)).await;
    let Outcome::Ok(other) = other else {
        panic!("{name}: acquire of a second key: {other:?}");
    };
    assert!(client.release(other).await.is_ok(), "{name}: release key 1");
    if let Some(n) = client.requests_sent() {
        assert!(
            n >= 12,
            "{name}: client counted only {n} requests for 12 calls"
        );
    }
    client.close().await;
}

/// `clients` clients hammer one key for `rounds` acquisitions each; inside the critical section
/// each checks a shared flag that only one holder may set. Returns nothing: any overlap panics.
pub async fn mutual_exclusion<B: Backend>(backend: &B, clients: u32, rounds: u32) {
    let name = backend.info().backend;
    let held = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for id in 0..clients {
        let mut client = connect(backend, id).await;
        let (held, overlaps) = (held.clone(), overlaps.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..rounds {
                let grant = match client.acquire(KeyId(0)).await {
                    Outcome::Ok(g) => g,
                    other => panic!("{name}: client {id} round {round}: {other:?}"),
                };
                if held.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_micros(300)).await;
                held.store(false, Ordering::SeqCst);
                let released = client.release(grant).await;
                assert!(
                    released.is_ok(),
                    "{name}: client {id} release: {released:?}"
                );
            }
            client.close().await;
        }));
    }
    for t in tasks {
        t.await.expect("client task panicked");
    }
    let n = overlaps.load(Ordering::SeqCst);
    assert_eq!(
        n, 0,
        "{name}: {n} overlapping holds with {clients} clients on one key"
    );
}

/// A client acquires and then dies without releasing ([`LockClient::abandon`]); a second client
/// waiting for the same key must be granted it once the backend notices (session timeout, lease
/// or TTL expiry), within `expiry + margin`. The dead holder's lock must not be granted early:
/// the wait must last at least `expiry / 2`.
pub async fn dead_holders_lock_is_taken_over<B: Backend>(
    backend: &B,
    expiry: Duration,
    margin: Duration,
) {
    let name = backend.info().backend;
    let mut holder = connect(backend, 0).await;
    let mut waiter = connect(backend, 1).await;
    let grant = match holder.acquire(KeyId(7)).await {
        Outcome::Ok(g) => g,
        other => panic!("{name}: holder acquire: {other:?}"),
    };
    let first_token = grant.token;
    let died = Instant::now();
    holder.abandon().await;
    drop(grant);
    let granted = tokio::time::timeout(expiry + margin, waiter.acquire(KeyId(7))).await;
    let waited = died.elapsed();
    let grant = match granted {
        Ok(Outcome::Ok(g)) => g,
        Ok(other) => panic!("{name}: waiter acquire after holder died: {other:?}"),
        Err(_) => panic!(
            "{name}: dead holder's lock not taken over within {:?}",
            expiry + margin
        ),
    };
    assert!(
        waited >= expiry / 2,
        "{name}: lock granted {waited:?} after its holder died, before the expiry {expiry:?} could have passed"
    );
    if let (Some(a), Some(b)) = (first_token, grant.token) {
        assert!(
            b > a,
            "{name}: new holder's token {b:?} not above dead holder's {a:?}"
        );
    }
    assert!(
        waiter.release(grant).await.is_ok(),
        "{name}: release after takeover"
    );
    waiter.close().await;
}

/// A backend pointed at a closed port must fail to connect within `limit`, with an error that
/// names `address`.
pub async fn unreachable_fails_fast<B: Backend>(backend: &B, address: &str, limit: Duration) {
    let started = Instant::now();
    let result = tokio::time::timeout(limit * 4, backend.connect(ClientId(0))).await;
    let took = started.elapsed();
    match result {
        Err(_) => panic!("connect to unreachable {address} hung for {took:?}"),
        Ok(Ok(_)) => panic!("connect to unreachable {address} succeeded"),
        Ok(Err(e)) => {
            let msg = e.to_string();
            assert!(
                msg.contains(address),
                "error does not name {address}: {msg}"
            );
            assert!(
                took <= limit,
                "connect to unreachable {address} took {took:?} (limit {limit:?})"
            );
        }
    }
}

/// Releasing a lock that has already expired reports [`ErrorKind::LockLost`] rather than
/// pretending it succeeded. For recipes with a TTL the caller passes a backend configured with
/// a short one.
pub async fn release_after_expiry_reports_lock_lost<B: Backend>(backend: &B, expiry: Duration) {
    let name = backend.info().backend;
    let mut client = connect(backend, 0).await;
    let grant = match client.acquire(KeyId(9)).await {
        Outcome::Ok(g) => g,
        other => panic!("{name}: acquire: {other:?}"),
    };
    tokio::time::sleep(expiry).await;
    match client.release(grant).await {
        Outcome::Fail(ErrorKind::LockLost) => {}
        other => panic!("{name}: release after expiry: expected fail lock-lost, got {other:?}"),
    }
    client.close().await;
}

/// The server-side observer ([`Backend::observe_server`]) names client 5 as key 2's holder
/// within 5 s of its acquire (over whatever connection settings `backend` has: the TLS tests
/// run it through TLS and a least-privileged user).
pub async fn observer_names_the_holder<B: Backend>(backend: &B) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let seen = seen.clone();
        lockbench_core::ServerSink::new(move |o| seen.lock().unwrap().push(o))
    };
    let observer = backend.observe_server(lockbench_core::RunClock::start(), 4, sink);
    tokio::pin!(observer);
    let named = tokio::select! {
        ended = &mut observer => panic!("the observer ended: {ended:?}"),
        named = async {
            let mut c = backend.connect(ClientId(5)).await.unwrap();
            let Outcome::Ok(g) = c.acquire(KeyId(2)).await else {
                panic!("acquire of key 2 by client 5")
            };
            let deadline = Instant::now() + Duration::from_secs(5);
            let named = loop {
                let hit = seen.lock().unwrap().iter()
                    .any(|o| o.key == KeyId(2) && o.holder == Some(ClientId(5)));
                if hit || Instant::now() > deadline {
                    break hit;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            assert!(c.release(g).await.is_ok());
            c.close().await;
            named
        } => named,
    };
    assert!(named, "the observer never named client 5 as key 2's holder");
}
