//! `nats-kv` against the conformance contract, and what the bucket's max age means for a
//! holder that stops renewing.

use crate::{backend, knobs};
use lockbench_conformance as conformance;
use lockbench_core::{Backend, ClientId, ErrorKind, KeyId, LockClient, Outcome};
use lockbench_nats::NatsBackend;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_acquire_release_and_tokens_grow() {
    let b = backend(&knobs("grow", Duration::from_secs(10))).await;
    conformance::acquire_release_and_tokens_grow(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_mutual_exclusion() {
    // 8 clients x 25 rounds on one key judge exclusion, not latency: on a loaded 2-core machine
    // JetStream once acknowledged no write for the default 2 s, and the contract fails on the
    // first acquire that does not succeed.
    let b = backend(&lockbench_nats::NatsKnobs {
        response_timeout: Duration::from_secs(10),
        ..knobs("mutex", Duration::from_secs(10))
    })
    .await;
    conformance::mutual_exclusion(&b, 8, 25).await;
}

/// An abandoned holder's entry ages out `ttl` after its write, with no event: the waiter's
/// timer, not a watch, gets it the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_dead_holders_lock_is_taken_over() {
    let ttl = Duration::from_secs(2);
    let b = backend(&knobs("dead", ttl)).await;
    conformance::dead_holders_lock_is_taken_over(&b, ttl, Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_unreachable_fails_fast() {
    let endpoints = lockbench_core::Endpoints::from_iter([(
        lockbench_nats::NATS,
        vec!["127.0.0.1:1".to_string()],
    )]);
    let b = NatsBackend::new(&endpoints, &knobs("unreachable", Duration::from_secs(10))).unwrap();
    conformance::unreachable_fails_fast(&b, "127.0.0.1:1", Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_release_after_expiry_reports_lock_lost() {
    let ttl = Duration::from_secs(1);
    let b = backend(&knobs("expired", ttl)).await;
    conformance::release_after_expiry_reports_lock_lost(&b, ttl * 3).await;
}

/// Renewals rewrite the entry, so a holder that renews more often than `ttl` keeps the lock
/// well past `ttl` (a waiter gets nothing meanwhile), and its token stays the acquiring
/// revision; once it stops, the waiter gets the lock about `ttl` after the last renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_renewal_keeps_the_lock_past_its_max_age() {
    let ttl = Duration::from_secs(1);
    let b = backend(&knobs("renew", ttl)).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let mut waiter = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(grant) = holder.acquire(KeyId(0)).await else {
        panic!("holder acquire")
    };
    let first = grant.handle.revision();
    let wait = tokio::spawn(async move {
        let started = Instant::now();
        let got = waiter.acquire(KeyId(0)).await;
        (started.elapsed(), got, waiter)
    });
    for _ in 0..10 {
        tokio::time::sleep(ttl / 4).await;
        let renewed = holder.renew(&grant).await;
        assert!(renewed.is_ok(), "renew: {renewed:?}");
        assert!(!wait.is_finished(), "the waiter got a renewed lock");
    }
    assert!(
        grant.handle.revision() > first,
        "renewal wrote a new revision"
    );
    let last_renewal = Instant::now();
    let (waited, got, mut waiter) = wait.await.unwrap();
    let since = last_renewal.elapsed();
    let Outcome::Ok(taken) = got else {
        panic!("waiter: {got:?}")
    };
    assert!(waited >= ttl * 2, "waited only {waited:?}");
    assert!(
        since >= ttl / 2 && since < ttl + Duration::from_secs(2),
        "granted {since:?} after the last renewal (ttl {ttl:?})"
    );
    assert!(
        taken.token > grant.token,
        "{:?} after {:?}",
        taken.token,
        grant.token
    );
    let renewed = holder.renew(&grant).await;
    assert!(
        matches!(renewed, Outcome::Fail(ErrorKind::LockLost)),
        "renew of an aged-out lock: {renewed:?}"
    );
    let released = holder.release(grant).await;
    assert!(
        matches!(released, Outcome::Fail(ErrorKind::LockLost)),
        "release of a taken-over lock: {released:?}"
    );
    assert!(waiter.release(taken).await.is_ok());
    holder.close().await;
    waiter.close().await;
}

/// A release wakes a waiter through its wake-up subject, at once (not at the holder's max age).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_a_release_wakes_the_waiter_at_once() {
    let b = backend(&knobs("wake", Duration::from_secs(30))).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let mut waiter = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(grant) = holder.acquire(KeyId(1)).await else {
        panic!("holder acquire")
    };
    let before = b.wakeups().unwrap();
    let wait = tokio::spawn(async move { (waiter.acquire(KeyId(1)).await, waiter) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!wait.is_finished(), "the waiter got a held lock");
    let released_at = Instant::now();
    assert!(holder.release(grant).await.is_ok());
    let (got, mut waiter) = tokio::time::timeout(Duration::from_secs(2), wait)
        .await
        .expect("the waiter was not woken by the release")
        .unwrap();
    assert!(released_at.elapsed() < Duration::from_secs(2));
    let Outcome::Ok(g) = got else {
        panic!("waiter: {got:?}")
    };
    let woke = b.wakeups().unwrap().since(before);
    assert!(woke.notifications >= 1, "{woke:?}");
    assert!(waiter.release(g).await.is_ok());
    holder.close().await;
    waiter.close().await;
}

/// An acquire dropped while its create is in flight (a run that ends) leaves no entry once
/// its client is closed: the next client gets the key at once, not `ttl` later. Each round
/// cancels after a different delay, so some rounds cancel before the create is sent, some
/// while it is being replicated (some finish: their grant is released).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_an_acquire_cancelled_in_flight_leaves_no_entry() {
    let b = backend(&knobs("cancelled", Duration::from_secs(30))).await;
    let mut next = b.connect(ClientId(99)).await.unwrap();
    for round in 0..20u64 {
        let mut c = b.connect(ClientId(round as u32)).await.unwrap();
        let cut = Duration::from_micros(200 * round);
        // An acquire that finished within the cut is released, as the client loop does.
        if let Ok(Outcome::Ok(g)) = tokio::time::timeout(cut, c.acquire(KeyId(4))).await {
            assert!(c.release(g).await.is_ok());
        }
        c.close().await;
        let started = Instant::now();
        let got = tokio::time::timeout(Duration::from_secs(5), next.acquire(KeyId(4))).await;
        let Ok(Outcome::Ok(g)) = got else {
            panic!("round {round} (cut after {cut:?}): the key stayed held: {got:?}")
        };
        assert!(started.elapsed() < Duration::from_secs(2), "round {round}");
        assert!(next.release(g).await.is_ok());
    }
    next.close().await;
}

/// A TCP forwarder to `server` that can be cut: while cut it closes every connection it has
/// and refuses new ones (accepts and closes them).
struct Cuttable {
    addr: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    links: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Cuttable {
    async fn to(server: String) -> Cuttable {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let links = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (c, l) = (cut.clone(), links.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if c.load(std::sync::atomic::Ordering::SeqCst) {
                    continue;
                }
                let server = server.clone();
                l.lock().unwrap().push(tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&server).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                }));
            }
        });
        Cuttable { addr, cut, links }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::SeqCst);
        if cut {
            for link in self.links.lock().unwrap().drain(..) {
                link.abort();
            }
        }
    }
}

/// A release published while the waiter's connection is down never reaches it; its
/// reconnect makes it look again, so it gets the lock at once, not `ttl` (30 s) later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_a_waiter_that_reconnects_looks_again() {
    let k = knobs("reconnect", Duration::from_secs(30));
    let direct = backend(&k).await;
    let server = crate::addresses().await[0].clone();
    let link = Cuttable::to(server).await;
    let endpoints =
        lockbench_core::Endpoints::from_iter([(lockbench_nats::NATS, vec![link.addr.clone()])]);
    let through = NatsBackend::new(&endpoints, &k).unwrap();
    let mut holder = direct.connect(ClientId(0)).await.unwrap();
    let mut waiter = through.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(grant) = holder.acquire(KeyId(0)).await else {
        panic!("holder acquire")
    };
    let wait = tokio::spawn(async move { (waiter.acquire(KeyId(0)).await, waiter) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    link.set_cut(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(holder.release(grant).await.is_ok());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !wait.is_finished(),
        "the waiter got the lock with its link cut"
    );
    let reopened = Instant::now();
    link.set_cut(false);
    let (got, mut waiter) = tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the waiter did not look again after its reconnect")
        .unwrap();
    let Outcome::Ok(g) = got else {
        panic!("waiter: {got:?}")
    };
    assert!(reopened.elapsed() < Duration::from_secs(10));
    assert!(waiter.release(g).await.is_ok());
    holder.close().await;
    waiter.close().await;
}
