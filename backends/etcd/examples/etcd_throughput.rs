//! Throughput of one etcd recipe: N clients, client `i` locking key `i % K` with no hold time,
//! for a few seconds (the same shape as the Go `concurrency.Mutex` reference client).
//!
//! ```text
//! cargo run --release -p lockbench-etcd --example etcd_throughput -- etcd-lease 8 1 5 [go-watch]
//! ```
//! Endpoints: `LOCKBENCH_ETCD=http://127.0.0.1:12379,...`, else the managed cluster.
//! `go-watch` makes etcd-lease wait the way Go's Mutex does (watch from the header revision:
//! unsynced), to measure what the synced watch buys.
//!
//! Besides acquire latency it prints the *hand-off* latency: from the moment a holder sends its
//! release to the moment the next holder of that key is granted (only when the grant went to a
//! different client than the previous one, i.e. it was a real hand-off).

use hdrhistogram::Histogram;
use lockbench_core::{Backend, BackendKind, ClientId, Endpoints, KeyId, LockClient, Outcome};
use lockbench_etcd::EtcdKnobs;
use lockbench_etcd::{EtcdBackend, WatchStart};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: etcd_throughput <etcd-lease|etcd-lockapi> N K SECONDS [go-watch]");
        std::process::exit(2);
    }
    let kind = BackendKind::named(&args[0]);
    let n: u32 = args[1].parse().expect("N");
    let k: u32 = args[2].parse().expect("K");
    let secs: f64 = args[3].parse().expect("SECONDS");
    let go_watch = args.get(4).is_some_and(|a| a == "go-watch");
    let endpoints = match std::env::var("LOCKBENCH_ETCD") {
        Ok(list) => Endpoints::from_iter([(
            lockbench_etcd::GROUP,
            list.split(',').map(str::to_string).collect(),
        )]),
        Err(_) => lockbench_cluster::for_tests().await,
    };
    let knobs = EtcdKnobs {
        lease_ttl: Duration::from_secs(10),
        prefix: format!("/lockbench-throughput/{}", std::process::id()),
    };
    let mut backend = EtcdBackend::new(kind, &endpoints, &knobs, k, 1).expect("backend");
    if go_watch {
        backend = backend.with_watch_start(WatchStart::AtHeaderRevision);
    }
    let mut clients = Vec::new();
    for i in 0..n {
        clients.push(backend.connect(ClientId(i)).await.expect("connect"));
    }
    let before = backend.server_counters().await.ok();
    let started = Instant::now();
    let stop = started + Duration::from_secs_f64(secs);
    // Per key: when the last release was sent (µs since start) and by which client (+1).
    let released: Arc<Vec<(AtomicU64, AtomicU64)>> = Arc::new(
        (0..k)
            .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
            .collect(),
    );
    let mut tasks = Vec::new();
    for (i, mut client) in clients.into_iter().enumerate() {
        let key = KeyId(i as u32 % k);
        let released = released.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
            let mut handoff =
                Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
            let slot = &released[key.0 as usize];
            let sent0 = client.requests_sent().unwrap_or(0);
            while Instant::now() < stop {
                let t = Instant::now();
                let grant = match client.acquire(key).await {
                    Outcome::Ok(g) => g,
                    other => panic!("acquire: {other:?}"),
                };
                hist.saturating_record(t.elapsed().as_micros() as u64);
                let now = started.elapsed().as_micros() as u64;
                let by = slot.1.load(Ordering::SeqCst);
                if by != 0 && by != i as u64 + 1 {
                    handoff.saturating_record(now.saturating_sub(slot.0.load(Ordering::SeqCst)));
                }
                slot.0
                    .store(started.elapsed().as_micros() as u64, Ordering::SeqCst);
                slot.1.store(i as u64 + 1, Ordering::SeqCst);
                match client.release(grant).await {
                    Outcome::Ok(()) => {}
                    other => panic!("release: {other:?}"),
                }
            }
            let sent = client.requests_sent().unwrap_or(0) - sent0;
            client.close().await;
            (hist, handoff, sent)
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let mut handoff = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let mut sent = 0;
    for t in tasks {
        let (h, ho, s) = t.await.expect("client task");
        hist.add(h).expect("merge");
        handoff.add(ho).expect("merge");
        sent += s;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = backend.server_counters().await.ok();
    let acq = hist.len();
    let server = match (before, after) {
        (Some(b), Some(a)) => format!(
            " server-msgs/acq={:.2}",
            (a.requests - b.requests) as f64 / acq as f64
        ),
        _ => String::new(),
    };
    let handoffs = if handoff.is_empty() {
        String::new()
    } else {
        format!(
            " hand-off mean={:.2}ms p50={:.2}ms p99={:.2}ms",
            handoff.mean() / 1e3,
            handoff.value_at_quantile(0.5) as f64 / 1e3,
            handoff.value_at_quantile(0.99) as f64 / 1e3
        )
    };
    println!(
        "{kind}{} n={n} keys={k}: {:.0} acq/s p50={:.2}ms p90={:.2}ms p99={:.2}ms{handoffs} requests/acq={:.2}{server} unproven-watches={}",
        if go_watch { " (go-watch)" } else { "" },
        acq as f64 / elapsed,
        hist.value_at_quantile(0.5) as f64 / 1e3,
        hist.value_at_quantile(0.9) as f64 / 1e3,
        hist.value_at_quantile(0.99) as f64 / 1e3,
        sent as f64 / acq as f64,
        backend.unproven_watches(),
    );
}
