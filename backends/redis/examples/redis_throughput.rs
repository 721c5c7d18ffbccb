//! Throughput of a Redis lock recipe: N clients on K keys, hold 0, for a number of seconds.
//!
//! ```text
//! cargo run --release -p lockbench-redis --example redis_throughput -- redis-setnx 50 50 10
//! ```
//!
//! Arguments: `BACKEND N K SECONDS` with BACKEND one of `redis-setnx`, `redlock`,
//! `redis-broken-nonx`. Servers: `LOCKBENCH_REDIS` (default `127.0.0.1:16379`) and
//! `LOCKBENCH_REDLOCK` (default `127.0.0.1:16380,...,16384`, the managed cluster's ports).
//! Knobs can be changed with `RETRY_DELAY_US`, `RETRY_JITTER_US`, `TTL_MS`; the tokio
//! runtime's worker threads (default: one per core) with `WORKERS`.
//!
//! Each client starts on key `i % K` and then picks keys at random (seeded; with `FIXED_KEYS=1`
//! it stays on key `i % K`, as the reference clients in `shared/anchors` do), acquires,
//! releases at once, and repeats. Prints acquisitions/s, requests/s (every request the clients sent:
//! acquire attempts, releases, script loads), acquire latency p50/p99, and the servers' own
//! request count for the same interval.

use hdrhistogram::Histogram;
use lockbench_core::{Backend, ClientId, Endpoints, KeyId, LockClient, Outcome};
use lockbench_redis::{RedisKnobs, RedlockKnobs};
use lockbench_redis::{RedlockBackend, SetMode, SetNxBackend};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

fn env_us(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .map(|v| Duration::from_micros(v.parse().expect(name)))
}

struct Totals {
    acquisitions: u64,
    requests: u64,
    latency: Histogram<u64>,
}

async fn run<B: Backend>(b: B, n: u32, k: u32, secs: u64) {
    let fixed = std::env::var("FIXED_KEYS").is_ok();
    let before = b.server_counters().await;
    let mut clients = Vec::new();
    for id in 0..n {
        clients.push(b.connect(ClientId(id)).await.expect("connect"));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for (id, mut c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            rng.set_stream(id as u64);
            let mut key = id as u32 % k;
            let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            let mut acquisitions = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                let grant = match c.acquire(KeyId(key)).await {
                    Outcome::Ok(g) => g,
                    other => panic!("client {id}: acquire: {other:?}"),
                };
                latency.saturating_record(t.elapsed().as_micros() as u64);
                acquisitions += 1;
                let _ = c.release(grant).await;
                if !fixed {
                    key = rng.random_range(0..k);
                }
            }
            let requests = c.requests_sent().unwrap_or(0);
            c.close().await;
            Totals {
                acquisitions,
                requests,
                latency,
            }
        }));
    }
    let mut total = Totals {
        acquisitions: 0,
        requests: 0,
        latency: Histogram::new_with_bounds(1, 60_000_000, 3).unwrap(),
    };
    for t in tasks {
        let t = t.await.unwrap();
        total.acquisitions += t.acquisitions;
        total.requests += t.requests;
        total.latency.add(&t.latency).unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = b.server_counters().await;
    println!("backend        {}", b.info().backend);
    println!("clients/keys   {n}/{k}, {elapsed:.1} s");
    println!("acquisitions/s {:.0}", total.acquisitions as f64 / elapsed);
    println!("requests/s     {:.0}", total.requests as f64 / elapsed);
    println!(
        "requests/acq   {:.2}",
        total.requests as f64 / total.acquisitions.max(1) as f64
    );
    println!(
        "acquire p50    {} us, p99 {} us, max {} us",
        total.latency.value_at_quantile(0.5),
        total.latency.value_at_quantile(0.99),
        total.latency.max()
    );
    if let (Ok(a), Ok(b)) = (before, after) {
        println!(
            "server counted {} requests (client counted {})",
            b.requests - a.requests,
            total.requests
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [backend, n, k, secs] = args.as_slice() else {
        eprintln!("usage: redis_throughput BACKEND N K SECONDS");
        std::process::exit(2);
    };
    let (n, k, secs): (u32, u32, u64) = (
        n.parse().unwrap(),
        k.parse().unwrap(),
        secs.parse().unwrap(),
    );
    let redis = std::env::var("LOCKBENCH_REDIS").unwrap_or_else(|_| "127.0.0.1:16379".into());
    let redlock = std::env::var("LOCKBENCH_REDLOCK")
        .unwrap_or_else(|_| {
            (16380..=16384)
                .map(|p| format!("127.0.0.1:{p}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .split(',')
        .map(str::to_string)
        .collect();
    let endpoints = Endpoints::from_iter([
        (lockbench_redis::REDIS, vec![redis]),
        (lockbench_redis::REDLOCK, redlock),
    ]);
    let prefix = format!("lockbench-throughput:{}:", std::process::id());
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Ok(w) = std::env::var("WORKERS") {
        rt.worker_threads(w.parse().expect("WORKERS"));
    }
    let rt = rt.enable_all().build().unwrap();
    rt.block_on(async {
        match backend.as_str() {
            "redis-setnx" | "redis-broken-nonx" => {
                let mut knobs = RedisKnobs {
                    prefix,
                    ..RedisKnobs::default()
                };
                knobs.retry_delay = env_us("RETRY_DELAY_US").unwrap_or(knobs.retry_delay);
                knobs.retry_jitter = env_us("RETRY_JITTER_US").unwrap_or(knobs.retry_jitter);
                if let Some(t) = env_us("TTL_MS") {
                    knobs.ttl = t * 1000;
                }
                let mode = if backend == "redis-setnx" {
                    SetMode::Nx
                } else {
                    SetMode::BrokenNoNx
                };
                run(
                    SetNxBackend::new(&endpoints, &knobs, k, 1, mode).unwrap(),
                    n,
                    k,
                    secs,
                )
                .await
            }
            "redlock" => {
                let mut knobs = RedlockKnobs {
                    prefix,
                    ..RedlockKnobs::default()
                };
                knobs.retry_delay = env_us("RETRY_DELAY_US").unwrap_or(knobs.retry_delay);
                knobs.retry_jitter = env_us("RETRY_JITTER_US").unwrap_or(knobs.retry_jitter);
                if let Some(t) = env_us("TTL_MS") {
                    knobs.ttl = t * 1000;
                }
                run(
                    RedlockBackend::new(&endpoints, &knobs, k, 1).unwrap(),
                    n,
                    k,
                    secs,
                )
                .await
            }
            other => panic!("unknown backend {other}"),
        }
    });
}
