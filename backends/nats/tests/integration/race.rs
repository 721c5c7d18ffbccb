//! Concurrent creates on one key of a replicated (R3) stream, the way the recipe makes them:
//! every round 8 connections, spread over the 3 servers, write the same key at once, each
//! expecting the key to have no message (`Nats-Expected-Last-Subject-Sequence: 0`), after the
//! key's last message was deleted by sequence (a release). At most one may win each round, and
//! exactly one when every writer had an answer by revision (a round where a writer failed
//! otherwise, a stream leader being elected, is counted; a few are allowed).
//!
//! The same rounds with each writer expecting a delete marker's sequence (what the KV API's
//! `create` does after a `delete`) are counted too and printed, not asserted: on 2.9 the
//! stream leader checks an expected sequence above 0 only before proposing the write, and
//! more than one writer can win (see `lockbench_nats::client`).

use crate::endpoints;
use async_nats::jetstream::Context;
use async_nats::jetstream::kv::{Store, UpdateErrorKind};
use async_nats::jetstream::stream::{Config, DiscardPolicy};
use lockbench_nats::NATS;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const WRITERS: usize = 8;

/// `WRITERS` handles on a new R3 bucket, their connections spread over the servers.
async fn bucket(name: &str, deny_delete: bool) -> (Context, Vec<Store>) {
    let e = endpoints().await;
    let addrs = e.get(NATS).to_vec();
    let mut stores = Vec::new();
    let mut first = None;
    for i in 0..WRITERS {
        let url = format!("nats://{}", addrs[i % addrs.len()]);
        let c = async_nats::ConnectOptions::new()
            .ignore_discovered_servers()
            .connect(url)
            .await
            .unwrap();
        let mut js = async_nats::jetstream::new(c);
        // Making R3 streams on a loaded 2-core machine can take seconds.
        js.set_timeout(std::time::Duration::from_secs(10));
        let config = Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            num_replicas: 3,
            allow_rollup: true,
            deny_delete,
            allow_direct: true,
            discard: DiscardPolicy::New,
            ..Config::default()
        };
        js.get_or_create_stream(config).await.unwrap();
        let store = js.get_key_value(name).await.unwrap();
        // A stream just made may have no leader for a moment: requests then time out.
        let mut waited = 0;
        while store
            .stream
            .get_info()
            .await
            .map_or(true, |i| i.cluster.and_then(|c| c.leader).is_none())
        {
            assert!(waited < 200, "{name}: no stream leader after 10 s");
            waited += 1;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        stores.push(store);
        first.get_or_insert(js);
    }
    (first.unwrap(), stores)
}

/// What the writers' `update(key, _, expected)` got: how many succeeded, and how many failed
/// otherwise than by the expected revision (a stream leader being elected answers "no
/// responders" at once).
async fn round(stores: &[Store], key: &str, expected: u64) -> (u64, u64) {
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut tasks = Vec::new();
    for s in stores {
        let (s, key, counts) = (s.clone(), key.to_string(), counts.clone());
        tasks.push(tokio::spawn(async move {
            match s.update(&key, "x".into(), expected).await {
                Ok(_) => counts[0].fetch_add(1, Ordering::Relaxed),
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => 0,
                Err(e) => {
                    eprintln!("{key}: {e}");
                    counts[1].fetch_add(1, Ordering::Relaxed)
                }
            };
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (
        counts[0].load(Ordering::Relaxed),
        counts[1].load(Ordering::Relaxed),
    )
}

async fn drop_bucket(js: &Context, s: &Store) {
    js.delete_stream(&s.stream_name).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn race_creates_on_an_emptied_key_have_one_winner() {
    let pid = std::process::id();
    let (js, stores) = bucket(&format!("race-empty-{pid}"), false).await;
    let mut unanswered = 0;
    for i in 0..100 {
        let key = format!("k{i}");
        let first = stores[0].update(&key, "x".into(), 0).await.unwrap();
        assert!(stores[0].stream.delete_message(first).await.unwrap());
        let (wins, errors) = round(&stores, &key, 0).await;
        assert!(
            wins <= 1,
            "round {i}: {wins} writers expecting an empty key won"
        );
        if errors == 0 {
            assert_eq!(wins, 1, "round {i}: every writer was refused an empty key");
        } else {
            unanswered += 1;
        }
    }
    assert!(
        unanswered <= 10,
        "{unanswered} of 100 rounds had writers fail otherwise than by revision"
    );
    drop_bucket(&js, &stores[0]).await;

    let (js, stores) = bucket(&format!("race-marker-{pid}"), true).await;
    let (mut doubled, mut grants) = (0, 0);
    for i in 0..50 {
        let key = format!("k{i}");
        let first = stores[0].update(&key, "x".into(), 0).await.unwrap();
        stores[0]
            .delete_expect_revision(&key, Some(first))
            .await
            .unwrap();
        let subject = format!("{}{key}", stores[0].prefix);
        let marker = stores[0]
            .stream
            .get_last_raw_message_by_subject(&subject)
            .await
            .unwrap()
            .sequence;
        let (wins, _) = round(&stores, &key, marker).await;
        grants += wins;
        doubled += u64::from(wins > 1);
    }
    eprintln!(
        "expecting a delete marker: {doubled} of 50 rounds had more than one winner \
         ({grants} grants)"
    );
    drop_bucket(&js, &stores[0]).await;
}
