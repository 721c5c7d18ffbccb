//! Tests of the client loop's own logic, against an in-memory lock (never a stand-in for a
//! real backend: it exists only to exercise stopping, counting and client retirement).

mod memory;

use lockbench_core::{ErrorKind, Op, OpF, OpType, RunClock, Scenario};
use lockbench_workloads::{ContentionRun, FencedResource, RunControl, run_contention};
use memory::{MemoryBackend, MemoryLocks};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn scenario(extra: &str) -> Scenario {
    let text = format!(
        "name='t'\nbackends=['redis-setnx']\nwarmup='0s'\nduration='0s'\n[workload]\nclients=4\nkeys=2\n{extra}"
    );
    Scenario::load("test", &text, &[]).unwrap()
}

async fn run(
    s: &Scenario,
    info_every: u64,
) -> (lockbench_workloads::RunOutput, Vec<Op>, Arc<MemoryLocks>) {
    let locks = MemoryLocks::new(s.workload.keys, info_every);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = ContentionRun {
        workload: s.workload.clone(),
        seed: s.seed,
        warmup: s.warmup,
        duration: s.duration,
        clock: RunClock::start(),
        resource: Arc::new(FencedResource::new(s.resource, s.workload.keys)),
        history: tx,
    };
    let out = run_contention(
        Arc::new(MemoryBackend(locks.clone())),
        run,
        RunControl::new(s.workload.clients),
    )
    .await
    .unwrap();
    let mut ops = Vec::new();
    while let Some(chunk) = rx.recv().await {
        ops.extend(chunk);
    }
    (out, ops, locks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_limited_run_stops_at_its_count_and_records_every_op() {
    let s = scenario("acquisitions = 500\nhold = '50us'");
    let (out, ops, _) = run(&s, 0).await;
    let n = out.acquisitions();
    assert!(
        (500..500 + 4).contains(&n),
        "measured {n} acquisitions for a count of 500"
    );
    let granted = ops
        .iter()
        .filter(|o| o.f == OpF::Acquire && o.ty == OpType::Ok)
        .count() as u64;
    assert_eq!(granted, out.acquisitions_total());
    let writes = ops
        .iter()
        .filter(|o| o.f == OpF::Write && o.ty != OpType::Invoke)
        .count() as u64;
    assert_eq!(writes, granted, "every holder writes once");
    assert!(
        ops.iter().all(|o| o.stale != Some(true)),
        "a real mutex never writes stale"
    );
    assert_eq!(
        out.requests_sent(),
        Some(out.acquisitions_total() * 2 + incomplete(&ops))
    );
    assert_eq!(out.acquire_latency().len(), n);
}

/// The clients run on the client threads, each where it was connected (its connection's
/// driver with it), and a run of more clients than cores uses every thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_runs_on_the_client_thread_it_was_connected_on() {
    let s = scenario("acquisitions = 400\nhold = '50us'");
    let (out, _, locks) = run(&s, 0).await;
    assert!(out.acquisitions() >= 400);
    assert_eq!(
        locks.moved.load(Ordering::SeqCst),
        0,
        "an acquire left its client's thread"
    );
    let names = locks.connect_threads.lock().unwrap().clone();
    let threads = lockbench_workloads::threads::client_threads().len();
    assert_eq!(names.len(), threads.min(4), "threads used: {names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("lockbench-clients-")),
        "clients connected elsewhere: {names:?}"
    );
}

/// `workload.slowdown` is waited inside every acquire: no acquire, from its intended start to
/// its grant, is faster than it, where the in-memory lock alone grants in microseconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_slowdown_is_waited_inside_every_acquire() {
    let s = scenario("acquisitions = 40\nslowdown = '5ms'");
    let (out, _, _) = run(&s, 0).await;
    let latency = out.acquire_latency();
    assert!(latency.len() >= 40, "{} acquisitions", latency.len());
    assert!(
        latency.min() >= 5_000,
        "fastest acquire {} µs",
        latency.min()
    );
    let plain = run(&scenario("acquisitions = 40"), 0)
        .await
        .0
        .acquire_latency();
    assert!(
        plain.min() < 5_000,
        "fastest plain acquire {} µs",
        plain.min()
    );
}

/// The slowdown is waited holding the lock: on one key, 40 acquisitions of 4 clients take at
/// least 40 delays end to end (waited before the request, they would overlap four at a time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_slowdown_holds_the_lock_so_a_hot_key_serves_fewer() {
    let one_key = ["workload.keys=1".to_string()];
    let text = "name='t'\nbackends=['redis-setnx']\nwarmup='0s'\nduration='0s'\n[workload]\n\
                clients=4\nkeys=2\nacquisitions=40\nslowdown='5ms'";
    let s = Scenario::load("test", text, &one_key)
        .unwrap()
        .for_backend("redis-setnx");
    let started = std::time::Instant::now();
    let (out, _, _) = run(&s, 0).await;
    assert!(out.acquisitions() >= 40);
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?} for 40 acquisitions held 5 ms each",
        started.elapsed()
    );
    // Named per backend: a backend not named waits nothing.
    let text = "name='t'\nbackends=['redis-setnx', 'zk-fair']\n[workload]\nclients=1\nkeys=1\n\
                [workload.slowdown]\nredis-setnx='5ms'";
    let each = Scenario::load("test", text, &[]).unwrap();
    assert!(each.for_backend("redis-setnx").workload.slowdown.is_some());
    assert!(each.for_backend("zk-fair").workload.slowdown.is_none());
}

/// Acquires invoked but never completed (stopped mid-call at the end of the run) still sent a
/// request.
fn incomplete(ops: &[Op]) -> u64 {
    let invoked = ops
        .iter()
        .filter(|o| o.f == OpF::Acquire && o.ty == OpType::Invoke)
        .count();
    let completed = ops
        .iter()
        .filter(|o| o.f == OpF::Acquire && o.ty != OpType::Invoke)
        .count();
    (invoked - completed) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indeterminate_acquire_retires_the_client_and_a_fresh_one_continues() {
    let s = scenario("acquisitions = 200");
    let (out, ops, locks) = run(&s, 7).await;
    let infos = ops.iter().filter(|o| o.ty == OpType::Info).count() as u32;
    assert!(infos > 0);
    let replaced: u32 = out.workers.iter().map(|w| w.clients_replaced).sum();
    assert_eq!(replaced, infos, "each info retires exactly one client");
    assert_eq!(locks.connects.load(Ordering::SeqCst), 4 + u64::from(infos));
    // Replacement clients get ids beyond the slots, and a retired id never appears again.
    let max_id = ops.iter().map(|o| o.client.0).max().unwrap();
    assert!(max_id >= 4, "no replacement client ids in the history");
    for info in ops.iter().filter(|o| o.ty == OpType::Info) {
        assert!(
            !ops.iter()
                .any(|o| o.client == info.client && o.time > info.time),
            "client {} used after its info",
            info.client
        );
    }
    let errors = out.errors();
    assert_eq!(
        errors.get(&(OpF::Acquire, OpType::Info, ErrorKind::ConnectionLost)),
        Some(&u64::from(infos))
    );
}

/// Runs `s` until it is stopped after `after`; fails if it has not ended 10 s later.
async fn stopped_after(s: &Scenario, after: Duration) -> (lockbench_workloads::RunOutput, Vec<Op>) {
    let control = RunControl::new(s.workload.clients);
    let stopper = control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        stopper.stop.send_replace(true);
    });
    let locks = MemoryLocks::new(2, 0);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = ContentionRun {
        workload: s.workload.clone(),
        seed: 1,
        warmup: Duration::ZERO,
        duration: Duration::ZERO,
        clock: RunClock::start(),
        resource: Arc::new(FencedResource::new(s.resource, 2)),
        history: tx,
    };
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        run_contention(Arc::new(MemoryBackend(locks)), run, control),
    )
    .await
    .expect("run did not stop")
    .unwrap();
    let mut ops = Vec::new();
    while let Some(chunk) = rx.recv().await {
        ops.extend(chunk);
    }
    (out, ops)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_run_ends_every_client_promptly() {
    let s = scenario("acquisitions = 1000000000\nhold = '1ms'");
    let (out, _) = stopped_after(&s, Duration::from_millis(200)).await;
    assert!(out.acquisitions() > 0);
}

/// `renew_every`: a hold far longer than the run is cut into renewals, each an invoke and a
/// completion on the holder's grant; stopping the run ends the hold, and the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_hold_records_its_renewals_and_ends_when_the_run_stops() {
    let s = scenario("acquisitions = 1000000000\nhold = '1h'\nrenew_every = '20ms'");
    let (_, ops) = stopped_after(&s, Duration::from_millis(300)).await;
    let count = |f: OpF, ty: OpType| ops.iter().filter(|o| o.f == f && o.ty == ty).count();
    let grants = count(OpF::Acquire, OpType::Ok);
    assert!(grants >= 1, "{ops:?}");
    assert!(count(OpF::Renew, OpType::Ok) >= grants, "{ops:?}");
    assert!(
        count(OpF::Renew, OpType::Ok) + 2 >= count(OpF::Renew, OpType::Invoke),
        "every renewal completed but those (one a key) cut short by the stop: {ops:?}"
    );
    assert_eq!(count(OpF::Release, OpType::Ok), grants, "{ops:?}");
    for renew in ops
        .iter()
        .filter(|o| o.f == OpF::Renew && o.ty == OpType::Ok)
    {
        let granted = ops.iter().any(|o| {
            o.f == OpF::Acquire
                && o.ty == OpType::Ok
                && o.client == renew.client
                && o.token == renew.token
        });
        assert!(granted, "a renewal of a grant the client holds: {renew:?}");
    }
}
