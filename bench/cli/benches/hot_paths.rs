//! `cargo bench --bench hot_paths`: the harness's own costs, which must stay far below a lock
//! round trip so they never shape the results. Per op in the client loop: recording a latency
//! into an HdrHistogram, reading the run's clock, recording one granted acquisition (its six
//! ops and two latencies, the chunks shipped to a receiver on another thread as to the history
//! writer), the in-process fenced resource's write and the lines of the resource service's
//! protocol (a worker's write), what a lock call pays for going through `AnyBackend` (the
//! type-erased backend every recipe is built as) on a recipe that answers at once beside the
//! same recipe called directly, and what a lock call through an adapter pays for its JSON
//! lines (encoding the request, reading the answer strictly). Per op or per chunk of a worker
//! on its own clock: mapping a worker time onto the coordinator's clock from ten minutes of
//! probes, and building that map. After or beside the run: merging per-client buffers into
//! one history (`History::from_unordered`), writing 100k ops to a history file as the run's
//! writer does (compact lines, zstd frames: it runs beside the clients, on the same cores),
//! and the mutual-exclusion, fencing and full safety checkers on a 100k-op synthetic history
//! (run once per backend after the load). No servers needed.

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, criterion_group, criterion_main};
use lockbench_adapter::protocol::{self, Request};
use lockbench_core::scenario::ResourceMode;
use lockbench_core::{ClientId, FencingToken, History, KeyId, Nanos, Op, OpF, OpType, Outcome};
use lockbench_workloads::clock::{ClockMap, DRIFT_ALLOWANCE_PPM};
use lockbench_workloads::recorder::Recorder;
use lockbench_workloads::resource::{self, FencedResource, WriteVerdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "hot_paths/fixtures.rs"]
mod fixtures;
use fixtures::{Instant0, probes, synthetic_ops};

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

/// One granted acquisition as the client loop records it in process: the acquire's invoke and
/// completion, its two latencies, the write's invoke and verdict, the release's invoke and
/// completion. `t` is the time so far, `rtt` the acquire's round trip in nanoseconds.
fn record_acquisition(rec: &mut Recorder, t: &mut u64, n: u64, rtt: u64) {
    let (id, key, token) = (ClientId(0), KeyId(n as u32 & 7), Some(FencingToken(n)));
    let intended = Nanos(*t);
    let sent = Nanos(*t + 1_000);
    rec.push(Op::invoke(intended, id, OpF::Acquire, key));
    let done = Nanos(*t + rtt);
    rec.complete(done, id, OpF::Acquire, key, OpType::Ok, token, None);
    rec.granted(true, intended, sent, done);
    let mut invoked = Op::invoke(Nanos(done.0 + 100), id, OpF::Write, key);
    invoked.grant = Some(n as u32);
    rec.push(invoked);
    let verdict = WriteVerdict {
        accepted: true,
        stale: Some(false),
    };
    let mut written = verdict.op(Nanos(done.0 + 200), id, key, token);
    written.grant = Some(n as u32);
    rec.push(written);
    rec.push(Op::invoke(Nanos(done.0 + 300), id, OpF::Release, key));
    *t = done.0 + 300 + rtt;
    rec.complete(Nanos(*t), id, OpF::Release, key, OpType::Ok, token, None);
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

    recorder(&mut g, &mut rng);
    resource(&mut g);
    worker_clock(&mut g, &mut rng);

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

    adapter(&mut g);
    g.finish();
}

type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Recording one granted acquisition ([`record_acquisition`]).
fn recorder(g: &mut Group<'_>, rng: &mut ChaCha8Rng) {
    // The history writer's end of the channel, drained on a thread of its own as in a run.
    let (sink, mut chunks) = tokio::sync::mpsc::unbounded_channel::<Vec<Op>>();
    let writer = std::thread::spawn(move || {
        while let Some(chunk) = chunks.blocking_recv() {
            black_box(chunk.len());
        }
    });
    let mut rec = Recorder::new(0, sink);
    // Round trips of a fast backend, 50 us to 2 ms, on a run-time clock: chunks ship as in a run.
    let rtts: Vec<u64> = (0..1024)
        .map(|_| rng.random_range(50_000..2_000_000))
        .collect();
    let (mut t, mut n) = (0u64, 0u64);
    g.bench_function("recorder_acquisition", |b| {
        b.iter(|| {
            n += 1;
            record_acquisition(&mut rec, &mut t, n, rtts[n as usize & 1023]);
        })
    });
    drop(rec);
    writer
        .join()
        .expect("the drain thread ends with the channel");
}

/// The fenced resource's write, in process and through the service's lines.
fn resource(g: &mut Group<'_>) {
    let fenced = FencedResource::new(ResourceMode::Fenced, 8);
    let mut n = 0u64;
    g.bench_function("resource_write", |b| {
        b.iter(|| {
            n += 1;
            black_box(fenced.write(KeyId(n as u32 & 7), Some(FencingToken(n))))
        })
    });
    // A worker's write through the resource service, socket aside: the request line written
    // and read, the decision, the reply line written and read.
    let served = FencedResource::new(ResourceMode::Fenced, 8);
    let mut n = 0u64;
    g.bench_function("resource_lines", |b| {
        b.iter(|| {
            n += 1;
            let (key, token) = (KeyId(n as u32 & 7), Some(FencingToken(n)));
            let line = resource::write_line(key, token, ClientId(3), n as u32);
            let (key, token, _, _) = resource::parse_write(&line).expect("a write line");
            black_box(resource::parse_reply(served.write(key, token).line()))
        })
    });
}

/// Mapping a worker time onto the coordinator's clock (per op of a worker on its own clock),
/// and building the map from the probes so far (per chunk of its ops).
fn worker_clock(g: &mut Group<'_>, rng: &mut ChaCha8Rng) {
    let (samples, times) = probes(rng);
    let map = ClockMap::new(samples.clone(), DRIFT_ALLOWANCE_PPM).expect("samples");
    let mut i = 0;
    g.bench_function("clock_map", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(map.map(times[i]))
        })
    });
    g.bench_function("clock_map_new_600", |b| {
        b.iter(|| black_box(ClockMap::new(samples.clone(), DRIFT_ALLOWANCE_PPM)))
    });
}

/// An acquire's request line and answer line through an adapter.
fn adapter(g: &mut Group<'_>) {
    let requests: Vec<Request> = (0..1024)
        .map(|id| Request {
            id,
            op: protocol::Op::Acquire,
            key: Some(id as u32 & 7),
        })
        .collect();
    let answers: Vec<String> = (0..1024)
        .map(|id| format!(r#"{{"id": {id}, "ok": true, "token": {}}}"#, 1_000 + id))
        .collect();
    let mut i = 0;
    g.bench_function("adapter_encode", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(requests[i].line())
        })
    });
    g.bench_function("adapter_decode", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(protocol::answer(&answers[i], &requests[i]).expect("an answer"))
        })
    });
}

criterion_group!(benches, hot_paths);
criterion_main!(benches);
