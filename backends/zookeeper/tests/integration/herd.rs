//! Notification fan-out with 20 waiters, zk-fair against zk-herd, on the managed ensemble
//! (`lockbench_cluster::for_tests`): a release wakes exactly one zk-fair waiter and every
//! zk-herd waiter still queued. Counted by lockbench (the backends' wake-up tallies) and
//! cross-checked against ZooKeeper's own figures:
//!
//! - exactly, per session: `cons` gives each of the test's sessions its packets received and
//!   sent; every request gets one reply, so `sent - received` grows by the notifications that
//!   session was sent. Only the test's own sessions are read, so other tests or chaos runs on
//!   the shared ensemble cannot skew it.
//! - as a lower bound, ensemble-wide: the `mntr` watch-trigger sums (other users can only add).
//!
//! The test drives the releases one at a time and lets every waiter settle on its watch before
//! the next release, so each release finds every remaining waiter watching (a waiter still
//! re-listing when the next delete lands would legitimately miss a notification, which would
//! make the count depend on timing).

use lockbench_conformance::fanout;
use lockbench_core::{Backend, ClientId, Endpoints, KeyId, LockClient, Wakeups};
use lockbench_zookeeper::{Queue, ZkFair, session_packets};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

use crate::{endpoints, knobs};

const WAITERS: u32 = 20;

/// A ZooKeeper session that outlives every wait of a cascade.
const SESSION: Duration = Duration::from_secs(10);

/// Sum over `sids` of the servers' `sent - received` packets (notifications sent to them),
/// and whether any of them has a request the server has not answered yet.
async fn server_view(eps: &Endpoints, sids: &[i64]) -> (i64, bool) {
    let mut tries = 0;
    'read: loop {
        tries += 1;
        let all = session_packets(eps.get(lockbench_zookeeper::GROUP))
            .await
            .expect("zookeeper cons");
        let mut notifications = 0i64;
        let mut busy = false;
        for sid in sids {
            let Some(p) = all.get(sid) else {
                // A member's answer can miss a connection that is just being set up.
                assert!(
                    tries < 20,
                    "session {sid:#x} not in any member's cons: {all:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue 'read;
            };
            notifications += p.sent as i64 - p.received as i64;
            busy |= p.queued > 0;
        }
        return (notifications, busy);
    }
}

/// Waits until the wake-up tally has reached `notifications` and has not moved for 300 ms,
/// the servers' per-session notification count has not moved either and no session has a
/// request outstanding (so every re-check was answered and its watch set). Returns the
/// servers' per-session count, read twice the same. Pings do not disturb it: each gets one
/// reply, so `sent - received` ignores them (except while one is in flight, which the second
/// read catches).
async fn settle<B: Backend>(b: &B, eps: &Endpoints, sids: &[i64], notifications: u64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tally = b.wakeups().unwrap();
        let (before, busy_before) = server_view(eps, sids).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (after, busy_after) = server_view(eps, sids).await;
        if tally.notifications >= notifications
            && b.wakeups() == Some(tally)
            && before == after
            && !busy_before
            && !busy_after
        {
            return after;
        }
        assert!(
            Instant::now() < deadline,
            "did not settle: tally {tally:?}, expected {notifications} notifications"
        );
    }
}

/// What one cascade of releases measured.
#[derive(Debug)]
struct Cascade {
    /// Lockbench's count over the cascade.
    counted: Wakeups,
    /// Notifications counted at each release (how many waiters it woke).
    per_release: Vec<u64>,
    /// The servers' per-session count over the cascade.
    server_sessions: i64,
    /// The servers' ensemble-wide watch triggers over the cascade.
    server_ensemble: u64,
}

/// One holder and [`WAITERS`] waiters queue on one key; then the holder and each waiter in
/// turn release, each release after everyone still queued has settled on its watch.
async fn cascade<B: Backend>(
    b: B,
    eps: &Endpoints,
    session_id: fn(&B::Client) -> i64,
    expect_per_release: impl Fn(u64) -> u64,
) -> Cascade {
    let key = KeyId(0);
    let mut holder = b.connect(ClientId(0)).await.expect("holder connects");
    let grant = holder.acquire(key).await;
    let lockbench_core::Outcome::Ok(grant) = grant else {
        panic!("holder acquire: {grant:?}")
    };
    let mut sids = vec![session_id(&holder)];
    let (granted_tx, mut granted) = mpsc::unbounded_channel::<u32>();
    let mut go = Vec::new();
    let mut tasks = Vec::new();
    let mut expected = 0;
    for id in 1..=WAITERS {
        let mut c = b.connect(ClientId(id)).await.expect("waiter connects");
        sids.push(session_id(&c));
        let (go_tx, go_rx) = oneshot::channel::<()>();
        go.push(Some(go_tx));
        let granted_tx = granted_tx.clone();
        tasks.push(tokio::spawn(async move {
            let lockbench_core::Outcome::Ok(g) = c.acquire(key).await else {
                panic!("waiter {id} acquire")
            };
            granted_tx.send(id).unwrap();
            go_rx.await.unwrap();
            assert!(c.release(g).await.is_ok(), "waiter {id} release");
            c
        }));
        // Queueing wakes the herd too (a new child); let each join settle before the next.
        // Wait for at least this waiter's first request before checking for quiet.
        tokio::time::sleep(Duration::from_millis(50)).await;
        expected = b.wakeups().unwrap().notifications;
        settle(&b, eps, &sids, expected).await;
    }
    let sessions_before = settle(&b, eps, &sids, expected).await;
    let counted_before = b.wakeups().unwrap();
    let ensemble_before = b.server_fanout().await.unwrap().unwrap().notifications;

    let mut per_release = Vec::new();
    assert!(holder.release(grant).await.is_ok(), "holder release");
    for next in 1..=WAITERS {
        let id = tokio::time::timeout(Duration::from_secs(10), granted.recv())
            .await
            .expect("a waiter is granted after a release")
            .unwrap();
        assert_eq!(id, next, "grants follow queue order");
        let queued = u64::from(WAITERS - next + 1);
        expected += expect_per_release(queued);
        settle(&b, eps, &sids, expected).await;
        let now = b.wakeups().unwrap().notifications;
        per_release.push(now - per_release.iter().sum::<u64>() - counted_before.notifications);
        assert!(granted.try_recv().is_err(), "two waiters granted at once");
        go[id as usize - 1].take().unwrap().send(()).unwrap();
    }
    let clients = fanout::join_waiters(tasks).await;
    let sessions_after = settle(&b, eps, &sids, expected).await;
    let counted = b.wakeups().unwrap().since(counted_before);
    let ensemble_after = b.server_fanout().await.unwrap().unwrap().notifications;
    fanout::close_all(clients, holder).await;
    Cascade {
        counted,
        per_release,
        server_sessions: sessions_after - sessions_before,
        server_ensemble: ensemble_after - ensemble_before,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predecessor_watch_wakes_one_waiter_per_release() {
    let eps = endpoints().await;
    let b = ZkFair::new(&eps, &knobs("herd-fair", SESSION), 1, 1).unwrap();
    let c = cascade(b, &eps, |c| c.session_id(), |_| 1).await;
    eprintln!("zk-fair: {c:?}");
    // The holder's release and each waiter's but the last wake exactly one waiter.
    assert_eq!(c.per_release, vec![1; WAITERS as usize], "{c:?}");
    assert_eq!(c.counted.notifications, u64::from(WAITERS), "{c:?}");
    assert_eq!(c.counted.wasted, 0, "{c:?}");
    assert_eq!(
        c.counted.requests,
        u64::from(WAITERS),
        "one re-check per wake-up: {c:?}"
    );
    assert_eq!(
        c.server_sessions,
        i64::from(WAITERS),
        "servers' per-session count: {c:?}"
    );
    assert!(c.server_ensemble >= u64::from(WAITERS), "{c:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_watch_wakes_every_waiter_per_release() {
    let eps = endpoints().await;
    let b = ZkFair::new(&eps, &knobs("herd-herd", SESSION), 1, 1)
        .unwrap()
        .with_queue(Queue::HERD);
    let c = cascade(b, &eps, |c| c.session_id(), |queued| queued).await;
    eprintln!("zk-herd: {c:?}");
    // Release k (k = 0 for the holder) finds WAITERS - k waiters queued and wakes all of them;
    // one re-check per wake-up, plus the winner's RemoveWatches.
    let total = fanout::assert_wakes_every_waiter(&c.per_release, c.counted, WAITERS, 1);
    assert_eq!(
        c.server_sessions, total as i64,
        "servers' per-session count: {c:?}"
    );
    assert!(c.server_ensemble >= total, "{c:?}");
}
