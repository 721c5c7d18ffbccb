//! Notification fan-out with 20 waiters, etcd-lease (watch the next-lower create revision)
//! against etcd-herd (every waiter watches the whole prefix), releases driven one at a time
//! (`lockbench_conformance::fanout`). Counted by lockbench where etcd-client hands the watch
//! events over, and cross-checked against etcd's own `etcd_debugging_mvcc_events_total`
//! (watch events sent, summed over members: other tests on the shared cluster can only add,
//! so it is a lower bound here).

use lockbench_conformance::fanout;
use lockbench_core::{BackendKind, Endpoints};
use lockbench_etcd::EtcdBackend;
use std::time::Duration;

use crate::{cluster, knobs};

const WAITERS: u32 = 20;

fn backend(kind: BackendKind, endpoints: &Endpoints, test: &str) -> EtcdBackend {
    EtcdBackend::new(kind, endpoints, &knobs(test, Duration::from_secs(10)), 1, 1).expect("backend")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_ordered_wait_wakes_one_waiter_per_release() {
    let eps = cluster().await;
    let b = backend(BackendKind::of("etcd-lease"), &eps, "herd-lease");
    let c = fanout::cascade(&b, WAITERS, |_| 1).await;
    eprintln!("etcd-lease: {c:?}");
    assert_eq!(c.per_release, vec![1; WAITERS as usize], "{c:?}");
    assert_eq!(
        c.grant_order,
        (1..=WAITERS).collect::<Vec<_>>(),
        "queue order"
    );
    assert_eq!(c.counted.notifications, u64::from(WAITERS), "{c:?}");
    assert_eq!(c.counted.wasted, 0, "{c:?}");
    // Per wake-up: the watch cancel and the re-check transaction.
    assert_eq!(c.counted.requests, 2 * u64::from(WAITERS), "{c:?}");
    assert!(c.server_notifications >= u64::from(WAITERS), "{c:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_watch_wakes_every_waiter_per_release() {
    let eps = cluster().await;
    let b = backend(BackendKind::of("etcd-herd"), &eps, "herd-herd");
    let c = fanout::cascade(&b, WAITERS, |queued| queued).await;
    eprintln!("etcd-herd: {c:?}");
    assert_eq!(
        c.grant_order,
        (1..=WAITERS).collect::<Vec<_>>(),
        "queue order"
    );
    // One re-check per wake-up; the winner just drops its watch stream.
    let total = fanout::assert_wakes_every_waiter(&c.per_release, c.counted, WAITERS, 0);
    assert!(c.server_notifications >= total, "{c:?}");
}
