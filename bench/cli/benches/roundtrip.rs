//! `cargo bench --bench roundtrip`: one client's acquire + release round trip per backend, on
//! an uncontended key, against real servers.
//!
//! Servers: the docker-compose cluster when its containers run (waited for until healthy), else
//! the managed cluster (started with `Cluster::up()` if it is not running, and stopped
//! afterwards if this bench started it); `LOCKBENCH_CLUSTER=managed|compose` overrides. The
//! first line says which. A backend whose servers cannot be reached fails the bench with their
//! addresses: a comparison with a backend silently missing would mislead. All backends are one
//! criterion group, so `target/criterion/roundtrip/report/index.html` compares them on one
//! page. `iter_custom` times the whole batch of round trips itself, so connecting is never
//! measured.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use lockbench_cluster::Cluster;
use lockbench_core::{Backend, ClientId, Endpoints, KeyId, LockClient, Outcome, Scenario};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

fn scenario() -> Scenario {
    lockbench_registry::load_scenario("bench", include_str!("../../../scenarios/quick.toml"), &[])
        .expect("quick.toml")
}

fn bench_backend<B: Backend>(
    group: &mut BenchmarkGroup<WallTime>,
    rt: &Runtime,
    name: &str,
    servers: &[String],
    backend: B,
) {
    let client = rt
        .block_on(backend.connect(ClientId(0)))
        .unwrap_or_else(|e| panic!("roundtrip/{name}: cannot reach {servers:?}: {e}"));
    let slot = Rc::new(RefCell::new(Some(client)));
    group.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let slot = slot.clone();
            async move {
                let mut client = slot.borrow_mut().take().expect("client");
                let start = Instant::now();
                for _ in 0..iters {
                    let grant = match client.acquire(KeyId(0)).await {
                        Outcome::Ok(g) => g,
                        other => panic!("{name}: acquire failed: {:?}", other.error()),
                    };
                    if let Some(e) = client.release(grant).await.error() {
                        panic!("{name}: release failed: {e}");
                    }
                }
                let elapsed = start.elapsed();
                *slot.borrow_mut() = Some(client);
                elapsed
            }
        })
    });
    if let Some(client) = slot.borrow_mut().take() {
        rt.block_on(client.close());
    }
}

/// The recipes compared: the first of each family (the others share its round trip).
const RECIPES: [&str; 6] = [
    "zk-fair",
    "zk-curator",
    "etcd-lease",
    "etcd-lockapi",
    "redis-setnx",
    "redlock",
];

fn roundtrips(c: &mut Criterion, rt: &Runtime, e: &Endpoints) {
    let mut s = scenario();
    s.workload.keys = 1;
    let mut group = c.benchmark_group("roundtrip");
    group.sample_size(10);
    for name in RECIPES {
        let kind = lockbench_registry::parse_backend(name).unwrap_or_else(|e| panic!("{e}"));
        let servers = lockbench_registry::addresses(e, lockbench_registry::group_of(kind));
        // The registry's constructor, as the runner uses it.
        let b = lockbench_registry::backend(kind, &s, e)
            .unwrap_or_else(|err| panic!("roundtrip/{name}: cannot reach {servers:?}: {err}"));
        bench_backend(&mut group, rt, name, servers, b);
    }
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (cluster, why) = lockbench_compose::bench_cluster().unwrap_or_else(|e| panic!("{e}"));
    let (endpoints, started) = if cluster == "compose" {
        eprintln!("roundtrip: the docker-compose cluster ({why})");
        let all = lockbench_cluster::SERVERS.to_vec();
        rt.block_on(lockbench_compose::wait_healthy(
            Duration::from_secs(90),
            &all,
        ))
        .unwrap_or_else(|e| panic!("roundtrip: {e:#}"));
        (lockbench_compose::route().endpoints(), None)
    } else {
        let cluster = Cluster::new(lockbench_cluster::default_state_dir());
        eprintln!("roundtrip: the managed cluster ({why}; starting it if needed)");
        let report = rt
            .block_on(cluster.up())
            .unwrap_or_else(|e| panic!("the managed cluster did not come up: {e:#}"));
        (report.status.endpoints, report.started.then_some(cluster))
    };
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    roundtrips(&mut c, &rt, &endpoints);
    c.final_summary();
    if let Some(cluster) = started {
        eprintln!("roundtrip: stopping the managed cluster this bench started");
        if let Err(e) = rt.block_on(cluster.down()) {
            eprintln!("roundtrip: could not stop the cluster: {e:#} (run `lockbench down`)");
        }
    }
}
