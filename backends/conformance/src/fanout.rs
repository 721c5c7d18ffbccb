//! Notification fan-out, measured one release at a time: a holder and `waiters` queued clients
//! on one key; the holder releases, then each waiter in turn once it is granted, and every
//! release waits until everything has settled, so each release's notifications are counted
//! exactly instead of depending on timing. Used by the backend crates' herd tests for every
//! recipe that counts its wake-ups ([`Backend::wakeups`]) and can say when its waiters are
//! settled (the servers' own watch/subscription gauge, [`Backend::server_fanout`]).
//!
//! "Settled" means: the wake-up tally has not moved for [`QUIET`], and the servers report at least as many watches or subscriptions as clients are
//! still waiting (a waiter whose watch is not registered yet could miss a release; with this
//! gauge the test waits for it instead).

use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome, Wakeups};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long the counters must stay still to count as settled.
pub const QUIET: Duration = Duration::from_millis(300);
/// How long one settle may take before the test fails.
const SETTLE_BUDGET: Duration = Duration::from_secs(20);

/// What one cascade of releases measured.
#[derive(Debug)]
pub struct Cascade {
    /// Lockbench's count over the releases (not the queueing before them).
    pub counted: Wakeups,
    /// Notifications counted at each release (how many waiters it woke).
    pub per_release: Vec<u64>,
    /// The servers' notification count over the releases.
    pub server_notifications: u64,
    /// Clients granted, in grant order (waiter ids `1..=waiters`).
    pub grant_order: Vec<u32>,
}

async fn settle<B: Backend>(b: &B, notifications: u64, waiting: u64) -> Wakeups {
    let name = b.info().backend;
    let deadline = Instant::now() + SETTLE_BUDGET;
    loop {
        let tally = b.wakeups().expect("a recipe that counts wake-ups");
        tokio::time::sleep(QUIET).await;
        let server_after = b
            .server_fanout()
            .await
            .expect("server fan-out")
            .expect("gauge");
        if tally.notifications >= notifications
            && b.wakeups() == Some(tally)
            && server_after.watches >= waiting
        {
            return tally;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: did not settle: tally {tally:?} (expected {notifications} notifications), \
             servers {server_after:?} (expected {waiting} watches)"
        );
    }
}

/// Queues `waiters` clients behind a holder on one key, then releases one at a time; each
/// release's notification count is expected to reach `expect_per_release(still queued)`
/// before the next. Panics if two clients are granted at once.
pub async fn cascade<B: Backend>(
    b: &B,
    waiters: u32,
    expect_per_release: impl Fn(u64) -> u64,
) -> Cascade {
    let name = b.info().backend;
    let key = KeyId(0);
    let mut holder = b.connect(ClientId(0)).await.expect("holder connects");
    let Outcome::Ok(grant) = holder.acquire(key).await else {
        panic!("{name}: holder acquire")
    };
    let (granted_tx, mut granted) = mpsc::unbounded_channel::<u32>();
    let mut go = Vec::new();
    let mut tasks = Vec::new();
    for id in 1..=waiters {
        let mut c = b.connect(ClientId(id)).await.expect("waiter connects");
        let (go_tx, go_rx) = oneshot::channel::<()>();
        go.push(Some(go_tx));
        let granted_tx = granted_tx.clone();
        tasks.push(tokio::spawn(async move {
            let Outcome::Ok(g) = c.acquire(key).await else {
                panic!("{name}: waiter {id} acquire")
            };
            granted_tx.send(id).unwrap();
            go_rx.await.unwrap();
            assert!(c.release(g).await.is_ok(), "{name}: waiter {id} release");
            c
        }));
        // Queueing may wake the herd too (a new entry); let each join settle before the next.
        let seen = b.wakeups().unwrap().notifications;
        settle(b, seen, u64::from(id)).await;
    }
    let counted_before = settle(b, 0, u64::from(waiters)).await;
    let server_before = b.server_fanout().await.unwrap().unwrap().notifications;

    let mut per_release = Vec::new();
    let mut grant_order = Vec::new();
    let mut expected = counted_before.notifications;
    assert!(
        holder.release(grant).await.is_ok(),
        "{name}: holder release"
    );
    for next in 1..=waiters {
        let id = tokio::time::timeout(Duration::from_secs(10), granted.recv())
            .await
            .unwrap_or_else(|_| panic!("{name}: no waiter granted after release {next}"))
            .unwrap();
        grant_order.push(id);
        let queued = u64::from(waiters - next + 1);
        expected += expect_per_release(queued);
        let now = settle(b, expected, queued - 1).await.notifications;
        per_release.push(now - per_release.iter().sum::<u64>() - counted_before.notifications);
        assert!(
            granted.try_recv().is_err(),
            "{name}: two waiters granted at once"
        );
        go[id as usize - 1].take().unwrap().send(()).unwrap();
    }
    let clients = join_waiters(tasks).await;
    let counted = settle(b, expected, 0).await.since(counted_before);
    let server_after = b.server_fanout().await.unwrap().unwrap().notifications;
    close_all(clients, holder).await;
    Cascade {
        counted,
        per_release,
        server_notifications: server_after - server_before,
        grant_order,
    }
}

/// Checks the herd shape: release k (k = 0 for the holder) woke every one of the `waiters - k`
/// clients still queued, all but one of those wake-ups were wasted, and each wake-up caused
/// one request plus `winner_requests` more for the one who got the lock. Returns the total
/// notifications, `waiters * (waiters + 1) / 2`.
pub fn assert_wakes_every_waiter(
    per_release: &[u64],
    counted: Wakeups,
    waiters: u32,
    winner_requests: u64,
) -> u64 {
    let expected: Vec<u64> = (0..waiters).map(|k| u64::from(waiters - k)).collect();
    assert_eq!(
        per_release, expected,
        "notifications per release ({counted:?})"
    );
    let total: u64 = expected.iter().sum();
    assert_eq!(counted.notifications, total, "{counted:?}");
    assert_eq!(counted.wasted, total - u64::from(waiters), "{counted:?}");
    assert_eq!(
        counted.requests,
        total + winner_requests * u64::from(waiters),
        "one request per wake-up, plus the winner's ({counted:?})"
    );
    total
}

/// The waiters' clients back from their tasks (a panicked waiter fails the test).
pub async fn join_waiters<C>(tasks: Vec<tokio::task::JoinHandle<C>>) -> Vec<C> {
    let mut clients = Vec::with_capacity(tasks.len());
    for t in tasks {
        clients.push(t.await.expect("waiter task"));
    }
    clients
}

/// Closes every waiter's client and the holder's.
pub async fn close_all<C: LockClient>(clients: Vec<C>, holder: C) {
    for c in clients {
        c.close().await;
    }
    holder.close().await;
}
