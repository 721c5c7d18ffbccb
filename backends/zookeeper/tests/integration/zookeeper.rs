//! zk-fair and zk-curator against the managed ZooKeeper ensemble (`lockbench_cluster::for_tests`).
//!
//! Every test uses its own `root`, so tests running at the same time never share a lock key.

use lockbench_conformance as conformance;
use lockbench_core::traits::BackendError;
use lockbench_core::{Backend, ClientId, Endpoints, ErrorKind, KeyId, LockClient, Outcome};
use lockbench_zookeeper::ZookeeperKnobs;
use lockbench_zookeeper::{Notifications, Queue, ZkCurator, ZkFair};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use zookeeper_client as zk;

use crate::{endpoints, knobs};

fn short() -> Duration {
    Duration::from_secs(4)
}

async fn raw_client(endpoints: &Endpoints) -> zk::Client {
    zk::Client::connect(&endpoints.get(lockbench_zookeeper::GROUP).join(","))
        .await
        .expect("raw zookeeper client")
}

/// Best-effort removal of a test's tree.
async fn cleanup(endpoints: &Endpoints, root: &str) {
    let client = raw_client(endpoints).await;
    let mut stack = vec![root.to_string()];
    let mut order = Vec::new();
    while let Some(path) = stack.pop() {
        if let Ok(children) = client.list_children(&path).await {
            stack.extend(children.into_iter().map(|c| format!("{path}/{c}")));
        }
        order.push(path);
    }
    for path in order.iter().rev() {
        let _ = client.delete(path, None).await;
    }
}

async fn fair(test: &str, session_timeout: Duration) -> (ZkFair, Endpoints, String) {
    let eps = endpoints().await;
    let knobs = knobs(test, session_timeout);
    let backend = ZkFair::new(&eps, &knobs, 1, 1).expect("zk-fair backend");
    (backend, eps, knobs.root)
}

async fn curator(test: &str, session_timeout: Duration) -> (ZkCurator, Endpoints, String) {
    let eps = endpoints().await;
    let knobs = knobs(test, session_timeout);
    let backend = ZkCurator::new(&eps, &knobs, 1, 1).expect("zk-curator backend");
    (backend, eps, knobs.root)
}

// ---- conformance, zk-fair ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_acquire_release_and_tokens_grow() {
    let (b, eps, root) = fair("fair-basic", short()).await;
    conformance::acquire_release_and_tokens_grow(&b).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_mutual_exclusion() {
    let (b, eps, root) = fair("fair-mutex", short()).await;
    conformance::mutual_exclusion(&b, 8, 25).await;
    cleanup(&eps, &root).await;
}

/// zk-rwlock's exclusive (write) side meets the same contract as zk-fair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rwlock_writers_meet_the_contract() {
    let (b, eps, root) = fair("rwlock", short()).await;
    let b = b.with_queue(Queue::RWLOCK);
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 8, 25).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_dead_holders_lock_is_taken_over() {
    let session = Duration::from_secs(2);
    let (b, eps, root) = fair("fair-dead", session).await;
    conformance::dead_holders_lock_is_taken_over(&b, session, Duration::from_secs(5)).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_unreachable_fails_fast() {
    let eps = Endpoints::from_iter([(lockbench_zookeeper::GROUP, vec!["127.0.0.1:1".into()])]);
    let b = ZkFair::new(&eps, &knobs("fair-unreachable", short()), 1, 1).unwrap();
    conformance::unreachable_fails_fast(&b, "127.0.0.1:1", Duration::from_secs(5)).await;
}

// ---- conformance, zk-curator ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_acquire_release_and_tokens_grow() {
    let (b, eps, root) = curator("curator-basic", short()).await;
    conformance::acquire_release_and_tokens_grow(&b).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_mutual_exclusion() {
    let (b, eps, root) = curator("curator-mutex", short()).await;
    conformance::mutual_exclusion(&b, 8, 25).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_dead_holders_lock_is_taken_over() {
    let session = Duration::from_secs(2);
    let (b, eps, root) = curator("curator-dead", session).await;
    conformance::dead_holders_lock_is_taken_over(&b, session, Duration::from_secs(5)).await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_unreachable_fails_fast() {
    let eps = Endpoints::from_iter([(lockbench_zookeeper::GROUP, vec!["127.0.0.1:1".into()])]);
    let b = ZkCurator::new(&eps, &knobs("curator-unreachable", short()), 1, 1).unwrap();
    conformance::unreachable_fails_fast(&b, "127.0.0.1:1", Duration::from_secs(5)).await;
}

// ---- zk-fair specifics ----

#[tokio::test]
async fn no_zookeeper_endpoints_is_a_config_error_naming_zookeeper() {
    let eps = Endpoints::default();
    let err = ZkFair::new(&eps, &ZookeeperKnobs::default(), 1, 1).unwrap_err();
    assert!(
        matches!(&err, BackendError::Config(m) if m.contains("zookeeper")),
        "{err}"
    );
    let err = ZkCurator::new(&eps, &ZookeeperKnobs::default(), 1, 1).unwrap_err();
    assert!(
        matches!(&err, BackendError::Config(m) if m.contains("zookeeper")),
        "{err}"
    );
}

async fn queue_length(raw: &zk::Client, dir: &str) -> usize {
    raw.list_children(dir).await.map(|c| c.len()).unwrap_or(0)
}

/// The herd test: with five waiters queued, each release wakes exactly one of them, and they
/// are granted in the order they queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_release_wakes_exactly_one_waiter() {
    let (b, eps, root) = fair("fair-herd", short()).await;
    let raw = raw_client(&eps).await;
    let dir = format!("{root}/fair/k0");
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(grant) = holder.acquire(KeyId(0)).await else {
        panic!("holder acquire")
    };
    let (granted_tx, mut granted) = mpsc::unbounded_channel();
    let mut counters: Vec<Notifications> = Vec::new();
    let mut go = Vec::new();
    let mut tasks = Vec::new();
    for id in 1..=5u32 {
        let mut c = b.connect(ClientId(id)).await.unwrap();
        counters.push(c.notification_counter());
        let (go_tx, go_rx) = oneshot::channel::<()>();
        go.push(Some(go_tx));
        let granted_tx = granted_tx.clone();
        tasks.push(tokio::spawn(async move {
            let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
                panic!("waiter {id} acquire")
            };
            granted_tx.send(id).unwrap();
            go_rx.await.unwrap();
            assert!(c.release(g).await.is_ok(), "waiter {id} release");
            let n = c.notifications();
            c.close().await;
            n
        }));
        // Queue the waiters in id order.
        let deadline = Instant::now() + Duration::from_secs(5);
        while queue_length(&raw, &dir).await < id as usize + 1 {
            assert!(Instant::now() < deadline, "waiter {id} never queued");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Let every waiter reach its watch.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let total = |c: &[Notifications]| c.iter().map(Notifications::get).sum::<u64>();
    assert_eq!(total(&counters), 0, "notifications before any release");
    assert!(holder.release(grant).await.is_ok());
    for expected in 1..=5u32 {
        let id = tokio::time::timeout(Duration::from_secs(5), granted.recv())
            .await
            .expect("a waiter is granted after a release")
            .unwrap();
        assert_eq!(id, expected, "grants follow queue order");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            total(&counters),
            u64::from(expected),
            "release number {expected} woke more than one waiter"
        );
        assert!(granted.try_recv().is_err(), "two waiters granted at once");
        go[id as usize - 1].take().unwrap().send(()).unwrap();
    }
    let per_waiter: Vec<u64> = futures_join(tasks).await;
    assert_eq!(per_waiter, vec![1; 5], "each waiter woken exactly once");
    holder.close().await;
    cleanup(&eps, &root).await;
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<u64>>) -> Vec<u64> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("waiter task"));
    }
    out
}

/// A lock whose session expires while held is reported as lost on renew and on release, and
/// the next client gets it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_held_through_session_expiry_is_lost() {
    let (b, eps, root) = fair("fair-expired", short()).await;
    let mut c = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(grant) = c.acquire(KeyId(0)).await else {
        panic!("acquire")
    };
    assert!(c.renew(&grant).await.is_ok());
    c.expire_session().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.session_alive() {
        assert!(
            Instant::now() < deadline,
            "client never noticed its session expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match c.renew(&grant).await {
        Outcome::Fail(ErrorKind::LockLost) => {}
        other => panic!("renew after expiry: {other:?}"),
    }
    match c.release(grant).await {
        Outcome::Fail(ErrorKind::LockLost) => {}
        other => panic!("release after expiry: {other:?}"),
    }
    let mut next = b.connect(ClientId(1)).await.unwrap();
    let started = Instant::now();
    let Outcome::Ok(g) = next.acquire(KeyId(0)).await else {
        panic!("next acquire")
    };
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "lock not free after expiry"
    );
    assert!(next.release(g).await.is_ok());
    next.close().await;
    c.close().await;
    cleanup(&eps, &root).await;
}

/// The request count is exact: an uncontended acquire + release is create + getChildren +
/// delete, and ZooKeeper's own counter saw at least that many packets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_counts_its_requests() {
    let (b, eps, root) = fair("fair-count", short()).await;
    let mut c = b.connect(ClientId(0)).await.unwrap();
    // First use of the key creates its parents.
    let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
        panic!()
    };
    assert!(c.release(g).await.is_ok());
    let before_client = c.requests_sent().unwrap();
    let before_server = b.server_counters().await.expect("mntr").requests;
    for _ in 0..10 {
        let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
            panic!()
        };
        assert!(c.release(g).await.is_ok());
    }
    let sent = c.requests_sent().unwrap() - before_client;
    let seen = b.server_counters().await.expect("mntr").requests - before_server;
    assert_eq!(sent, 30, "10 uncontended acquire+release = 30 requests");
    assert!(
        seen >= sent,
        "servers saw {seen} packets, client sent {sent}"
    );
    assert!(b.server_counters().await.unwrap().source.contains("mntr"));
    c.close().await;
    cleanup(&eps, &root).await;
}

/// close() deletes the session's nodes at once (a graceful close), unlike abandon().
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_close_frees_held_lock_at_once() {
    let (b, eps, root) = fair("fair-close", Duration::from_secs(10)).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(_grant) = holder.acquire(KeyId(0)).await else {
        panic!()
    };
    let mut next = b.connect(ClientId(1)).await.unwrap();
    holder.close().await;
    let started = Instant::now();
    let Outcome::Ok(g) = tokio::time::timeout(Duration::from_secs(5), next.acquire(KeyId(0)))
        .await
        .expect("lock freed by close")
    else {
        panic!()
    };
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "close did not free the lock at once"
    );
    assert!(next.release(g).await.is_ok());
    next.close().await;
    cleanup(&eps, &root).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_close_frees_held_lock_at_once() {
    let (b, eps, root) = curator("curator-close", Duration::from_secs(10)).await;
    let mut holder = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(_grant) = holder.acquire(KeyId(0)).await else {
        panic!()
    };
    let mut next = b.connect(ClientId(1)).await.unwrap();
    holder.close().await;
    let started = Instant::now();
    let Outcome::Ok(g) = tokio::time::timeout(Duration::from_secs(5), next.acquire(KeyId(0)))
        .await
        .expect("lock freed by close")
    else {
        panic!()
    };
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "close did not free the lock at once"
    );
    assert!(next.release(g).await.is_ok());
    next.close().await;
    cleanup(&eps, &root).await;
}

/// zk-election: a resign hands leadership to the next candidate in line at once (a
/// predecessor watch), well inside the session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_resign_hands_over_quickly() {
    let timeout = Duration::from_secs(10);
    let e = lockbench_zookeeper::ZkElection::new(
        &endpoints().await,
        &knobs("election", timeout),
        "resign",
    )
    .expect("zk-election");
    conformance::election::resign_hands_over(&e, timeout).await;
}

// ---- a chroot from the cluster file ----

/// zk-fair with `chroot` set for the `zookeeper` group meets the contract, and its lock root
/// is under the chroot on the server, not at the ensemble's top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_under_a_chroot_keeps_its_nodes_under_it() {
    let mut eps = endpoints().await;
    let raw = raw_client(&eps).await;
    let knobs = knobs("chroot", short());
    let chroot = format!("{}-chroot", knobs.root);
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for path in [crate::TEST_ROOT, chroot.as_str()] {
        match raw.create(path, b"", &persistent).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => panic!("create {path}: {e}"),
        }
    }
    let mut connection = lockbench_core::Connection::default();
    connection.system.insert("chroot".into(), chroot.clone());
    eps.set_connection(lockbench_zookeeper::GROUP, connection);
    let b = ZkFair::new(&eps, &knobs, 1, 1).expect("zk-fair under a chroot");
    conformance::acquire_release_and_tokens_grow(&b).await;
    let under = format!("{chroot}{}", knobs.root);
    assert!(
        raw.check_stat(&under).await.unwrap().is_some(),
        "{under} was not made"
    );
    assert!(
        raw.check_stat(&knobs.root).await.unwrap().is_none(),
        "{} was made outside the chroot",
        knobs.root
    );
    cleanup(&eps, &chroot).await;
}
