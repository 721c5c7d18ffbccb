//! The scale benchmark: how many idle clients (each with its own session, lease or
//! connections) a backend's servers hold before connecting, latency or memory breaks down.
//!
//! For each step N (cumulative: the clients of step N stay while N' > N is reached), the
//! benchmark connects the missing clients ([`crate::connect_all`], bounded
//! batches), lets the servers settle for [`SETTLE`], then:
//! - a **probe** client, connected before the first step and otherwise idle, acquires and
//!   releases its own uncontended key `probes` times: the latency an application would see from
//!   a cluster that holds N other sessions (p50 / p99 / max);
//! - the **servers' resident memory** (`VmRSS` from `/proc/<pid>/status` of the managed server
//!   processes the backend uses, summed), and the growth over the baseline read before any
//!   client connected, divided by N: the memory one idle client costs the cluster;
//! - lockbench's own RSS (all clients live in this one process).
//!
//! Idle means connected and not queued: ZooKeeper sessions with their pings, etcd leases with
//! their keep-alives (every ttl / 3) and connections, Redis connections. With `waiting`, every
//! client instead queues on one lock (key 1) that a holder keeps for the whole benchmark, so
//! each also holds its queue entry and its watch (ZooKeeper node + watch, etcd key + watcher,
//! redis-pubsub subscription; polling recipes keep polling); at the end the holder releases
//! and the queue drains (each waiter acquires, releases and closes in turn). A connect
//! that fails ends that backend's steps and is reported as where it broke. Only the managed
//! cluster can be measured (RSS needs the server pids).

use lockbench_core::{Backend, ClientId, KeyId, LockClient, Outcome};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How long the servers get after each step's connects before they are measured.
pub const SETTLE: Duration = Duration::from_secs(2);
/// The probe's client id, far from the step clients' ids.
const PROBE: ClientId = ClientId(1_000_000);
/// With `waiting`: the holder's client id, and the lock everyone queues on.
const HOLDER: ClientId = ClientId(1_000_001);
const QUEUE_KEY: KeyId = KeyId(1);
/// How long the queue may take to drain at the end.
const DRAIN_BUDGET: Duration = Duration::from_secs(300);

/// One step's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Idle clients connected.
    pub clients: u32,
    /// Wall time to connect this step's new clients, in seconds.
    pub connect_s: f64,
    /// Per new client, in milliseconds (batched connects overlap, so this is throughput).
    pub connect_ms_per_client: f64,
    /// The probe's acquire latency with this many idle clients, in microseconds.
    pub probe_p50_us: Option<u64>,
    /// 99th percentile, in microseconds.
    pub probe_p99_us: Option<u64>,
    /// Maximum, in microseconds.
    pub probe_max_us: Option<u64>,
    /// Probe acquires that did not succeed.
    pub probe_failures: u32,
    /// The backend's servers' resident memory, summed, in MiB.
    pub server_rss_mib: Option<f64>,
    /// `(server RSS - baseline) / clients`, in KiB.
    pub server_kib_per_client: Option<f64>,
    /// lockbench's own resident memory (every client lives in it), in MiB.
    pub lockbench_rss_mib: Option<f64>,
}

/// One backend's run through the steps.
#[derive(Clone, Debug, Serialize)]
pub struct BackendScale {
    /// The recipe.
    pub backend: String,
    /// Server RSS before any client connected, in MiB.
    pub baseline_server_rss_mib: Option<f64>,
    /// The steps reached.
    pub steps: Vec<Step>,
    /// Why it stopped before the last step, if it did.
    pub broke: Option<String>,
    /// Whether the clients were queued on a held lock (watchers) rather than idle.
    pub waiting: bool,
}

/// Reads the summed RSS (bytes) of the servers the backend uses; `None` when unknown.
pub type RssReader<'a> = &'a (dyn Fn() -> futures::future::BoxFuture<'static, Option<u64>> + Sync);

/// Runs the steps against `backend`.
pub async fn measure<B: Backend>(
    backend: B,
    steps: &[u32],
    probes: u32,
    waiting: bool,
    server_rss: RssReader<'_>,
) -> BackendScale {
    let name = backend.info().backend.name().to_string();
    let baseline = server_rss().await;
    let mut out = BackendScale {
        backend: name.clone(),
        baseline_server_rss_mib: baseline.map(mib),
        steps: Vec::new(),
        broke: None,
        waiting,
    };
    let mut probe = match backend.connect(PROBE).await {
        Ok(c) => c,
        Err(e) => {
            out.broke = Some(format!("probe client: {e}"));
            return out;
        }
    };
    let mut holder = None;
    if waiting {
        let held = match backend.connect(HOLDER).await {
            Ok(mut c) => match c.acquire(QUEUE_KEY).await {
                Outcome::Ok(g) => Ok((c, g)),
                other => Err(format!("holder acquire: {other:?}")),
            },
            Err(e) => Err(format!("holder client: {e}")),
        };
        match held {
            Ok(h) => holder = Some(h),
            Err(e) => {
                out.broke = Some(e);
                probe.close().await;
                return out;
            }
        }
    }
    let mut clients: Vec<B::Client> = Vec::new();
    let mut queued = Vec::new();
    let mut have = 0u32;
    for &n in steps {
        if n > have {
            let slots: Vec<u32> = (have..n).collect();
            let started = Instant::now();
            match crate::connect_all(&backend, &slots).await {
                Ok(more) if waiting => queued.extend(more.into_iter().map(|mut c| {
                    tokio::spawn(async move {
                        if let Outcome::Ok(g) = c.acquire(QUEUE_KEY).await {
                            let _ = c.release(g).await;
                        }
                        c.close().await;
                    })
                })),
                Ok(more) => clients.extend(more),
                Err(e) => {
                    out.broke = Some(format!("connecting clients {have}..{n}: {e}"));
                    break;
                }
            }
            let took = started.elapsed().as_secs_f64();
            let from = std::mem::replace(&mut have, n);
            eprintln!(
                "lockbench: {name}: {n} clients connected; settling {SETTLE:?}, then probing"
            );
            tokio::time::sleep(SETTLE).await;
            let (latencies, failures) = probe_latencies(&mut probe, probes).await;
            let rss = server_rss().await;
            out.steps.push(Step {
                clients: n,
                connect_s: round(took, 3),
                connect_ms_per_client: round(took * 1e3 / f64::from(n - from), 3),
                probe_p50_us: percentile(&latencies, 0.50),
                probe_p99_us: percentile(&latencies, 0.99),
                probe_max_us: latencies.last().copied(),
                probe_failures: failures,
                server_rss_mib: rss.map(mib),
                server_kib_per_client: match (rss, baseline) {
                    (Some(now), Some(base)) => {
                        Some(round((now as f64 - base as f64) / 1024.0 / f64::from(n), 1))
                    }
                    _ => None,
                },
                lockbench_rss_mib: own_rss().map(mib),
            });
        }
    }
    close_all(clients).await;
    if let Some((mut c, g)) = holder {
        eprintln!(
            "lockbench: {name}: releasing the held lock; {} waiters drain",
            queued.len()
        );
        let _ = c.release(g).await;
        let drain = futures::future::join_all(queued);
        if tokio::time::timeout(DRAIN_BUDGET, drain).await.is_err() {
            eprintln!("lockbench: {name}: the queue did not drain within {DRAIN_BUDGET:?}");
        }
        c.close().await;
    }
    probe.close().await;
    out
}

/// `probes` uncontended acquire/release rounds; sorted latencies (µs) of the successful
/// acquires, and the failures.
async fn probe_latencies<C: LockClient>(probe: &mut C, probes: u32) -> (Vec<u64>, u32) {
    let mut latencies = Vec::with_capacity(probes as usize);
    let mut failures = 0;
    for _ in 0..probes {
        let started = Instant::now();
        match tokio::time::timeout(Duration::from_secs(15), probe.acquire(KeyId(0))).await {
            Ok(Outcome::Ok(g)) => {
                latencies.push(started.elapsed().as_micros() as u64);
                let _ = probe.release(g).await;
            }
            _ => failures += 1,
        }
    }
    latencies.sort_unstable();
    (latencies, failures)
}

/// Closes clients in bounded batches (a ZooKeeper close re-attaches to the session first).
async fn close_all<C: LockClient>(mut clients: Vec<C>) {
    while !clients.is_empty() {
        let batch = clients.split_off(
            clients
                .len()
                .saturating_sub(crate::connect::CONNECT_PARALLELISM),
        );
        futures::future::join_all(batch.into_iter().map(|c| c.close())).await;
    }
}

fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

fn own_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn mib(bytes: u64) -> f64 {
    round(bytes as f64 / (1024.0 * 1024.0), 1)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The table printed at the end.
pub fn render(all: &[BackendScale]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<14} {:>7} {:>9} {:>8} {:>9} {:>9} {:>9} {:>11} {:>11} {:>10}\n",
        "backend",
        "clients",
        "connect s",
        "ms/cli",
        "probe p50",
        "probe p99",
        "probe max",
        "server MiB",
        "KiB/client",
        "own MiB"
    ));
    let ms = |us: Option<u64>| us.map_or("-".to_string(), |u| format!("{:.2}", u as f64 / 1e3));
    let f1 = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    for b in all {
        for s in &b.steps {
            out.push_str(&format!(
                "{:<14} {:>7} {:>9.2} {:>8.2} {:>9} {:>9} {:>9} {:>11} {:>11} {:>10}{}\n",
                b.backend,
                format!("{}{}", s.clients, if b.waiting { "*" } else { "" }),
                s.connect_s,
                s.connect_ms_per_client,
                ms(s.probe_p50_us),
                ms(s.probe_p99_us),
                ms(s.probe_max_us),
                f1(s.server_rss_mib),
                f1(s.server_kib_per_client),
                f1(s.lockbench_rss_mib),
                if s.probe_failures > 0 {
                    format!("  ({} probe failures)", s.probe_failures)
                } else {
                    String::new()
                }
            ));
        }
        if let Some(why) = &b.broke {
            out.push_str(&format!("{:<14} BROKE: {why}\n", b.backend));
        }
    }
    out.push_str(
        "clients marked * were queued on a held lock (a watch each); probe latencies in ms (one \
         more client, uncontended key); server MiB = VmRSS of \
         the backend's managed server processes, summed; KiB/client = growth over the baseline / \
         clients (JVM and Go heaps grow and shrink on their own: a negative or jumping figure \
         means an idle client costs less than that noise; start from a fresh cluster)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
