//! `cargo bench --bench hot_paths`: the harness's own costs, which must stay far below a lock
//! round trip so they never shape the results: recording a latency into an HdrHistogram (once
//! per op in the client loop), merging per-client buffers into one history
//! (`History::from_unordered`), and the mutual-exclusion, fencing and full safety checkers on
//! a 100k-op synthetic history (run once per backend after the load), writing 100k ops to a
//! history file as the run's writer does (compact lines, zstd frames: it runs beside the
//! clients, on the same cores), reading the run's clock, and what a lock call pays for going
//! through `AnyBackend` (the type-erased backend every recipe is built as) on a recipe that
//! answers at once, beside the same recipe called directly. No servers needed.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    BackendInfo, ClientId, FencingToken, Grant, History, KeyId, Nanos, Op, OpF, OpType, Outcome,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A recipe that grants at once, to time what the harness adds to a lock call.
struct Instant0;

/// Its client: no I/O, a grant is the key.
struct InstantClient;

impl lockbench_core::LockClient for InstantClient {
    type Handle = u64;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<u64>> {
        Outcome::Ok(Grant {
            key,
            token: None,
            handle: u64::from(key.0),
        })
    }

    async fn release(&mut self, grant: Grant<u64>) -> Outcome<()> {
        black_box(grant.handle);
        Outcome::Ok(())
    }

    async fn renew(&mut self, _grant: &Grant<u64>) -> Outcome<()> {
        Outcome::Ok(())
    }

    fn requests_sent(&self) -> Option<u64> {
        None
    }

    async fn close(self) {}

    async fn abandon(self) {}
}

impl lockbench_core::Backend for Instant0 {
    type Client = InstantClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: lockbench_core::BackendKind::of("instant"),
            waits_by: "never waits".into(),
            fencing: "none".into(),
            knobs: Vec::new(),
        }
    }

    async fn connect(&self, _client: ClientId) -> Result<InstantClient, BackendError> {
        Ok(InstantClient)
    }

    async fn server_counters(&self) -> Result<lockbench_core::ServerCounters, String> {
        Err("no server".into())
    }
}

/// `iters` acquire + release pairs on a client of `backend`, timed as one batch.
fn lock_calls<B: lockbench_core::Backend>(
    rt: &tokio::runtime::Runtime,
    b: &B,
    iters: u64,
) -> Duration {
    use lockbench_core::LockClient;
    rt.block_on(async {
        let mut c = b.connect(ClientId(0)).await.expect("connects");
        let start = Instant::now();
        for i in 0..iters {
            let Outcome::Ok(g) = c.acquire(KeyId(i as u32 & 7)).await else {
                unreachable!("it grants at once")
            };
            black_box(c.release(g).await.is_ok());
        }
        start.elapsed()
    })
}

/// 100k ops: 8 clients taking turns on 4 keys (acquire, write, release, each invoke + ok), with
/// increasing tokens, as per-client buffers concatenated (unordered across clients).
fn synthetic_ops(n: usize) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let clients = 8u32;
    let mut per_client: Vec<Vec<Op>> = vec![Vec::new(); clients as usize];
    let mut t = 0u64;
    let mut token = 0u64;
    let mut produced = 0;
    while produced < n {
        let client = ClientId(rng.random_range(0..clients));
        let key = KeyId(rng.random_range(0..4));
        token += 1;
        let tok = Some(FencingToken(token));
        let buf = &mut per_client[client.0 as usize];
        for (f, tk) in [(OpF::Acquire, tok), (OpF::Write, tok), (OpF::Release, None)] {
            t += rng.random_range(100..10_000);
            buf.push(Op::invoke(Nanos(t), client, f, key));
            t += rng.random_range(100..10_000);
            buf.push(Op::complete(Nanos(t), client, f, key, OpType::Ok, tk, None));
            produced += 2;
        }
    }
    per_client.into_iter().flatten().take(n).collect()
}

fn hot_paths(c: &mut Criterion) {
    let mut g = c.benchmark_group("hot_paths");
    g.sample_size(10);

    let mut h = lockbench_workloads::recorder::latency_histogram();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let values: Vec<u64> = (0..1024).map(|_| rng.random_range(50..200_000)).collect();
    let mut i = 0;
    g.bench_function("histogram_record", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            h.record(black_box(values[i])).expect("in range");
        })
    });

    let ops = synthetic_ops(100_000);
    g.bench_function("history_from_unordered_100k", |b| {
        b.iter_batched(
            || ops.clone(),
            |ops| black_box(History::from_unordered(ops)),
            BatchSize::LargeInput,
        )
    });
    let dir = std::env::temp_dir().join(format!("lockbench-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(lockbench_core::history::file::FILE_NAME);
    g.bench_function("history_write_100k", |b| {
        b.iter(|| {
            let _ = std::fs::remove_file(&path);
            let mut w = lockbench_core::history::file::FrameWriter::append(&path).expect("file");
            for op in &ops {
                w.push_op(op, Some("redis-setnx"));
                w.maybe_flush().expect("write");
            }
            w.flush().expect("write");
            black_box(w.len())
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
    let clock = lockbench_core::RunClock::start();
    g.bench_function("run_clock_now", |b| b.iter(|| black_box(clock.now())));

    let history = History::from_unordered(ops);
    g.bench_function("mutex_check_100k", |b| {
        b.iter(|| black_box(lockbench_analysis::mutex::check(&history)))
    });
    g.bench_function("fencing_check_100k", |b| {
        b.iter(|| black_box(lockbench_analysis::fencing::check(&history)))
    });
    g.bench_function("safety_check_100k", |b| {
        b.iter(|| black_box(lockbench_analysis::safety::check(&history)))
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    g.bench_function("lock_call_direct", |b| {
        b.iter_custom(|iters| lock_calls(&rt, &Instant0, iters))
    });
    let erased = lockbench_core::AnyBackend::new(Instant0);
    g.bench_function("lock_call_erased", |b| {
        b.iter_custom(|iters| lock_calls(&rt, &erased, iters))
    });
    g.finish();
}

criterion_group!(benches, hot_paths);
criterion_main!(benches);
