//! The cluster the managed cluster starts: three servers, healthy, one leader of the default
//! bucket's stream, the version Debian ships.

use crate::{addresses, backend};
use lockbench_core::System;
use lockbench_nats::system::Nats;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends the exchange and reads until its reply is whole or the server closes.
async fn ask(ex: &lockbench_core::Exchange) -> Vec<u8> {
    let talk = async {
        let mut s = tokio::net::TcpStream::connect(&ex.addr).await.unwrap();
        s.write_all(&ex.request).await.unwrap();
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            reply.extend_from_slice(&buf[..n]);
            if n == 0 || (ex.complete)(&reply) {
                return reply;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), talk)
        .await
        .unwrap_or_else(|_| panic!("{} did not answer", ex.addr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_healthy_with_one_bucket_leader_and_report_their_version() {
    // The default bucket exists once a backend on it has connected (as in any run).
    let b = backend(&lockbench_nats::NatsKnobs::default()).await;
    drop(
        lockbench_core::Backend::connect(&b, lockbench_core::ClientId(0))
            .await
            .unwrap(),
    );
    let list = addresses().await;
    assert_eq!(list.len(), 3, "{list:?}");
    let mut leaders = 0;
    for endpoint in &list {
        let health = Nats.health(&ask(&Nats.health_check(endpoint)).await);
        assert!(health.healthy, "{endpoint}: {health:?}");
        let version = Nats.version(&ask(&Nats.version_check(endpoint).unwrap()).await);
        assert!(
            version.as_deref().is_some_and(|v| v.starts_with("2.9.")),
            "{endpoint}: {version:?}"
        );
        if Nats.is_leader(&ask(&Nats.leader_check(endpoint).unwrap()).await) {
            leaders += 1;
        }
    }
    assert_eq!(
        leaders, 1,
        "exactly one leader of the default bucket's stream"
    );
}
