//! Quick throughput check, shaped like the Curator anchor (`shared/anchors/CuratorLock.java`):
//! N clients, client `i` on key `i % K`, closed loop acquire → release with no hold time.
//!
//! ```text
//! cargo run --release -p lockbench-zookeeper --example zk_throughput -- [fair|curator] N K SECONDS
//! ```
//! Endpoints: `ZK=host:port,...` if set, else the managed cluster (`lockbench_cluster::for_tests`).
//! Prints acquisitions/s, acquire latency p50/p99, requests per acquisition (zk-fair) and
//! ZooKeeper's own packet count per acquisition (`mntr`, includes pings).

use lockbench_core::{Backend, ClientId, Endpoints, KeyId, LockClient, Outcome};
use lockbench_zookeeper::ZookeeperKnobs;
use lockbench_zookeeper::{ZkCurator, ZkFair};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let recipe = args
        .first()
        .map(String::as_str)
        .unwrap_or("fair")
        .to_string();
    let n: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(8);
    let k: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let secs: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8.0);
    let endpoints = match std::env::var("ZK") {
        Ok(list) => Endpoints::from_iter([(
            lockbench_zookeeper::GROUP,
            list.split(',').map(str::to_string).collect(),
        )]),
        Err(_) => lockbench_cluster::for_tests().await,
    };
    let knobs = ZookeeperKnobs {
        root: format!("/lockbench-throughput/{}", std::process::id()),
        ..ZookeeperKnobs::default()
    };
    match recipe.as_str() {
        "fair" => run(ZkFair::new(&endpoints, &knobs, k, 1).unwrap(), n, k, secs).await,
        "curator" => {
            run(
                ZkCurator::new(&endpoints, &knobs, k, 1).unwrap(),
                n,
                k,
                secs,
            )
            .await
        }
        other => panic!("unknown recipe {other}; expected fair or curator"),
    }
}

async fn run<B: Backend>(backend: B, n: u32, k: u32, secs: f64) {
    let mut clients = Vec::new();
    for i in 0..n {
        clients.push(backend.connect(ClientId(i)).await.expect("connect"));
    }
    // Warm up: create every key's parents once.
    for (i, c) in clients.iter_mut().enumerate().take(k as usize) {
        if let Outcome::Ok(g) = c.acquire(KeyId(i as u32)).await {
            let _ = c.release(g).await;
        }
    }
    let sent_before: Option<u64> = clients.iter().map(|c| c.requests_sent()).sum();
    let server_before = backend.server_counters().await.ok();
    let started = Instant::now();
    let stop = started + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for (i, mut c) in clients.into_iter().enumerate() {
        let key = KeyId(i as u32 % k);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(1 << 16);
            while Instant::now() < stop {
                let t = Instant::now();
                let grant = match c.acquire(key).await {
                    Outcome::Ok(g) => g,
                    other => panic!("acquire: {other:?}"),
                };
                latencies.push(t.elapsed());
                match c.release(grant).await {
                    Outcome::Ok(()) => {}
                    other => panic!("release: {other:?}"),
                }
            }
            (c, latencies)
        }));
    }
    let mut all = Vec::new();
    let mut clients = Vec::new();
    for t in tasks {
        let (c, l) = t.await.unwrap();
        all.extend(l);
        clients.push(c);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let server_after = backend.server_counters().await.ok();
    let sent_after: Option<u64> = clients.iter().map(|c| c.requests_sent()).sum();
    all.sort();
    let count = all.len() as f64;
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    print!(
        "{} n={n} keys={k}: {:.0} acq/s p50={:.2}ms p99={:.2}ms",
        backend.info().backend,
        count / elapsed,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
    );
    if let (Some(a), Some(b)) = (sent_before, sent_after) {
        print!(" requests/acq={:.2}", (b - a) as f64 / count);
    }
    if let (Some(a), Some(b)) = (server_before, server_after) {
        print!(
            " mntr-packets/acq={:.2}",
            (b.requests - a.requests) as f64 / count
        );
    }
    println!();
    for c in clients {
        c.close().await;
    }
}
