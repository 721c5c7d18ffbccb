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
        let g = match c.acquire(KeyId(round % 3)).await {
            Outcome::Ok(g) => g,
            Outcome::Fail(e) | Outcome::Info(e) => panic!("acquire {round}: {e:?}"),
        };
        assert!(c.renew(&g).await.is_ok());
        assert!(c.release(g).await.is_ok());
    }
    let (counted, sent) = counts_once_settled(&b, &before, &c).await;
    c.close().await;
    assert!(sent >= 60, "client counted {sent}");
    assert_eq!(
        counted, sent,
        "servers counted {counted}, client sent {sent}"
    );
}

/// The servers' count since `before` and the client's own, read until they agree or 10 s have
/// passed (then the last of each). A release publishes its wake-up without waiting for the
/// write, and the client counts it once written; on a loaded machine that write, its arrival
/// or a server's answer to the reading can take a while. Counts that never agree still fail.
async fn counts_once_settled(
    b: &lockbench_nats::NatsBackend,
    before: &lockbench_core::ServerCounters,
    client: &impl LockClient,
) -> (u64, u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let sent = client
            .requests_sent()
            .expect("the client counts what it sends");
        let reading = b.server_counters().await.and_then(|now| now.since(before));
        let late = tokio::time::Instant::now() >= deadline;
        match reading {
            Ok(counted) if counted == sent || late => return (counted, sent),
            Err(e) if late => panic!("reading the counters: {e}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_observer_names_the_holder() {
    let b = backend(&knobs("observer", Duration::from_secs(10))).await;
    conformance::observer_names_the_holder(&b).await;
}

/// A TCP forwarder in front of `server` (what a link proxy is to the clients): its address.
async fn forwarder(server: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let server = server.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&server).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    addr
}

/// Through proxies (runs with link faults), where the monitoring port is not beside the client
/// endpoint, the counters still read every server and agree with the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_counters_are_read_through_proxies() {
    let mut proxied = Vec::new();
    for a in crate::addresses().await {
        proxied.push(forwarder(a).await);
    }
    let endpoints = lockbench_core::Endpoints::from_iter([(lockbench_nats::NATS, proxied)]);
    // Two extra connections a reading (the proxy's and the server's): room on a loaded machine.
    let k = lockbench_nats::NatsKnobs {
        response_timeout: Duration::from_secs(10),
        ..knobs("proxied", Duration::from_secs(10))
    };
    let b = lockbench_nats::NatsBackend::new(&endpoints, &k).unwrap();
    let before = b.server_counters().await.unwrap();
    assert_eq!(before.servers.len(), 3, "{before:?}");
    let mut c = b.connect(ClientId(0)).await.unwrap();
    for _ in 0..10 {
        let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
            panic!("acquire")
        };
        assert!(c.release(g).await.is_ok());
    }
    let (counted, sent) = counts_once_settled(&b, &before, &c).await;
    c.close().await;
    assert!(sent >= 30, "client counted {sent}");
    assert_eq!(
        counted, sent,
        "servers counted {counted}, client sent {sent}"
    );
}

/// The observer's reads are neither in the servers' count nor reported to the run (which
/// subtracts what an observer reports from that count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_observer_reads_are_not_counted() {
    let b = backend(&knobs("observer-count", Duration::from_secs(10))).await;
    let before = b.server_counters().await.unwrap();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let s = seen.clone();
    let sink = lockbench_core::ServerSink::new(move |_| {
        s.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    let observer = b.observe_server(lockbench_core::RunClock::start(), 4, sink.clone());
    let _ = tokio::time::timeout(Duration::from_secs(1), observer).await;
    // It read: every key's first state was recorded.
    assert!(seen.load(std::sync::atomic::Ordering::Relaxed) >= 4);
    let counted = b.server_counters().await.unwrap().since(&before).unwrap();
    assert_eq!(
        (counted, sink.requests()),
        (0, 0),
        "(servers' count, reported) of the observer's reads"
    );
}
