//! Notification fan-out with 20 waiters: redis-pubsub (every waiter subscribed to the release
//! channel) delivers one message per waiter per release, counted by lockbench where the
//! library hands the message over and matched exactly against Redis's own count of receivers
//! (each `PUBLISH` reply), with `INFO commandstats` `publish` calls as a lower bound (other
//! tests share the server). Polling redis-setnx reports its retries as wake-ups.

use lockbench_conformance::fanout;
use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome};
use lockbench_redis::RedisKnobs;
use lockbench_redis::{SetMode, SetNxBackend};
use std::time::Duration;

use crate::{EXCLUSIVE, endpoints};

const WAITERS: u32 = 20;

async fn backend(test: &str) -> SetNxBackend {
    let eps = endpoints().await;
    let knobs = RedisKnobs {
        ttl: Duration::from_secs(10),
        prefix: format!("lockbench-test:{test}:{}:", std::process::id()),
        ..RedisKnobs::default()
    };
    SetNxBackend::new(&eps, &knobs, 1, 1, SetMode::Nx).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_wakes_every_subscribed_waiter_per_release() {
    let _shared = EXCLUSIVE.read().await;
    let b = backend("herd-pubsub").await.with_pubsub();
    let publish_before = b.command_calls(&["publish"]).await.unwrap();
    let c = fanout::cascade(&b, WAITERS, |queued| queued).await;
    let publish_after = b.command_calls(&["publish"]).await.unwrap();
    eprintln!("redis-pubsub: {c:?}");
    // One SET NX per wake-up, plus the winner's UNSUBSCRIBE.
    let total = fanout::assert_wakes_every_waiter(&c.per_release, c.counted, WAITERS, 1);
    // Redis's own receiver counts, exactly.
    assert_eq!(c.server_notifications, total, "{c:?}");
    // Every release published (holder + each waiter), in the release script.
    assert!(
        publish_after - publish_before > u64::from(WAITERS),
        "publish calls {publish_before} -> {publish_after}"
    );
}

/// Polling: every retry is a wake-up (the timer's), wasted when refused again, and one
/// request; the server's `evalsha` count matches the client's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_reports_retries_as_wakeups() {
    let _shared = EXCLUSIVE.read().await;
    let b = backend("herd-poll").await;
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
        panic!("waiter acquire")
    };
    let w = b.wakeups().unwrap().since(before);
    // retry_delay 1 ms + jitter < 2 ms: 300 ms of holding makes dozens of retries.
    assert!(w.notifications >= 20, "{w:?}");
    assert_eq!(w.requests, w.notifications, "{w:?}");
    assert_eq!(
        w.wasted,
        w.notifications - 1,
        "only the last retry won: {w:?}"
    );
    assert!(waiter.release(g).await.is_ok());
    assert!(
        b.server_fanout().await.unwrap().is_none(),
        "polling has no notifications"
    );
    waiter.close().await;
    holder.close().await;
}
