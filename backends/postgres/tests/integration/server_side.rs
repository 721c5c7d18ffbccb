//! The servers' side: `pg_stat_statements` agrees with the clients' own count, and the
//! `pg_locks` observer names the holder.

use crate::{backend, knobs};
use lockbench_core::{
    Backend, ClientId, KeyId, LockClient, Outcome, RunClock, ServerObservation, ServerSink,
};
use lockbench_postgres::PgRecipe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every statement a client sent was counted by the server once, for each recipe (the
/// fencing sequence's setup included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_counters_agree_with_the_clients_count() {
    for (i, recipe) in PgRecipe::ALL.into_iter().enumerate() {
        let b = backend(recipe, &knobs(9_500 + i as i32)).await;
        let before = b.server_counters().await.unwrap();
        assert!(!before.servers.is_empty(), "{recipe}: no server read");
        let mut c = b.connect(ClientId(0)).await.unwrap();
        for round in 0..20 {
            let Outcome::Ok(g) = c.acquire(KeyId(round % 3)).await else {
                panic!("{recipe}: acquire")
            };
            assert!(c.renew(&g).await.is_ok());
            assert!(c.release(g).await.is_ok());
        }
        let sent = c.requests_sent().unwrap();
        c.close().await;
        let after = b.server_counters().await.unwrap();
        let counted = after.since(&before).unwrap();
        let floor = if recipe == PgRecipe::Xact { 80 } else { 60 };
        assert!(sent >= floor, "{recipe}: client counted {sent}");
        assert_eq!(
            counted, sent,
            "{recipe}: server counted {counted}, client sent {sent}"
        );
    }
}

/// What `pg_stat_statements` does not count: a `pg_advisory_lock` cancelled by
/// `lock_timeout` (the client counted it when it sent it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_counters_leave_out_a_lock_that_timed_out() {
    let mut k = knobs(9_510);
    k.lock_timeout = Duration::from_millis(200);
    let b = backend(PgRecipe::Advisory, &k).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let mut waiter = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(g) = holder.acquire(KeyId(0)).await else {
        panic!("acquire")
    };
    let before = b.server_counters().await.unwrap();
    let sent_before = waiter.requests_sent().unwrap();
    assert!(!waiter.acquire(KeyId(0)).await.is_ok());
    let sent = waiter.requests_sent().unwrap() - sent_before;
    let counted = b.server_counters().await.unwrap().since(&before).unwrap();
    assert_eq!(
        (sent, counted),
        (1, 0),
        "(sent, counted) for a timed-out lock"
    );
    assert!(holder.release(g).await.is_ok());
    holder.close().await;
    waiter.close().await;
}

/// The observer sees a grant named by the holder's client id, and the release as nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_observer_names_the_holder() {
    for (i, recipe) in PgRecipe::ALL.into_iter().enumerate() {
        let b = backend(recipe, &knobs(9_520 + i as i32)).await;
        let seen = Arc::new(Mutex::new(Vec::<ServerObservation>::new()));
        let out = seen.clone();
        let sink = ServerSink::new(move |o| out.lock().unwrap().push(o));
        let clock = RunClock::start();
        let b = Arc::new(b);
        let observer = {
            let b = b.clone();
            tokio::spawn(async move { b.observe_server(clock, 4, sink).await })
        };
        let wait_for = async |what: &dyn Fn(&ServerObservation) -> bool| {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                if seen.lock().unwrap().iter().any(what) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            false
        };
        assert!(
            wait_for(&|o| o.key == KeyId(2) && !o.blind && o.holder.is_none()).await,
            "{recipe}: the observer never saw key 2 free"
        );
        let mut c = b.connect(ClientId(7)).await.unwrap();
        let Outcome::Ok(g) = c.acquire(KeyId(2)).await else {
            panic!("{recipe}: acquire")
        };
        assert!(
            wait_for(&|o| o.key == KeyId(2) && o.holder == Some(ClientId(7))).await,
            "{recipe}: the observer never named client 7: {:?}",
            seen.lock().unwrap()
        );
        assert!(c.release(g).await.is_ok());
        let held_at = seen
            .lock()
            .unwrap()
            .iter()
            .position(|o| o.holder == Some(ClientId(7)))
            .unwrap();
        let started = Instant::now();
        let mut freed = false;
        while !freed && started.elapsed() < Duration::from_secs(10) {
            freed = seen.lock().unwrap()[held_at..]
                .iter()
                .any(|o| o.key == KeyId(2) && !o.blind && o.holder.is_none());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(freed, "{recipe}: the observer never saw the release");
        assert!(
            seen.lock()
                .unwrap()
                .iter()
                .all(|o| o.sent.is_some() || o.blind),
            "{recipe}: polled observations say when their read was sent"
        );
        observer.abort();
        c.close().await;
    }
}
