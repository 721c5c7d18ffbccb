//! The servers' side: `/connz` agrees with the clients' own count, and the observer names the
//! holder.

use crate::{backend, knobs};
use lockbench_conformance as conformance;
use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome};
use std::time::Duration;

/// Every message a client published was counted by the servers once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_counters_agree_with_the_clients_count() {
    let b = backend(&knobs("counters", Duration::from_secs(10))).await;
    let before = b.server_counters().await.unwrap();
    assert_eq!(before.servers.len(), 3, "{before:?}");
    let mut c = b.connect(ClientId(0)).await.unwrap();
    for round in 0..20 {
        let Outcome::Ok(g) = c.acquire(KeyId(round % 3)).await else {
            panic!("acquire")
        };
        assert!(c.renew(&g).await.is_ok());
        assert!(c.release(g).await.is_ok());
    }
    // A release publishes its wake-up without waiting for the write: the last one is counted
    // once the connection has written it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = c.requests_sent().unwrap();
    c.close().await;
    let after = b.server_counters().await.unwrap();
    let counted = after.since(&before).unwrap();
    assert!(sent >= 60, "client counted {sent}");
    assert_eq!(
        counted, sent,
        "servers counted {counted}, client sent {sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_observer_names_the_holder() {
    let b = backend(&knobs("observer", Duration::from_secs(10))).await;
    conformance::observer_names_the_holder(&b).await;
}
