//! Workers that dial in over TCP (`lockbench_workloads::dial`): the handshake, the job, the ops
//! and the end of a run, with the in-memory lock of `memory` standing in for the servers (the
//! subject is the transport and its authentication, not a backend).

mod memory;

use lockbench_core::{BackendKind, Endpoints, Op, RunClock, Scenario};
use lockbench_workloads::clock::TestSkew;
use lockbench_workloads::dial::{self, Listener, RunSecret};
use lockbench_workloads::remote::{RemoteWorker, WorkerClock};
use lockbench_workloads::worker::{self, FromWorker, Job, ToWorker};
use lockbench_workloads::{FencedResource, ResourceService, RunControl, WorkerSinks};
use memory::{MemoryBackend, MemoryLocks};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

fn scenario(hold: &str) -> Scenario {
    let text = format!(
        "name='t'\nbackends=['redis-setnx']\nwarmup='0s'\nduration='60s'\n\
         [workload]\nclients=2\nkeys=1\nhold='{hold}'\n"
    );
    Scenario::load("test", &text, &[]).unwrap()
}

/// The coordinator's side of a run: its clock, the resource service, the sinks.
struct Coordinator {
    clock: RunClock,
    job: Job,
    sinks: WorkerSinks,
    history: mpsc::UnboundedReceiver<Vec<Op>>,
    _service: ResourceService,
}

async fn coordinator() -> Coordinator {
    coordinator_holding("100us").await
}

/// A coordinator whose clients hold each grant for `hold`.
async fn coordinator_holding(hold: &str) -> Coordinator {
    let s = scenario(hold);
    let clock = RunClock::start();
    let (history_tx, history) = mpsc::unbounded_channel();
    let service = ResourceService::start(
        Arc::new(FencedResource::new(s.resource, s.workload.keys)),
        [127, 0, 0, 1].into(),
        clock,
        history_tx.clone(),
    )
    .await
    .unwrap();
    let job = Job {
        backend: BackendKind::of("redis-setnx"),
        endpoints: Endpoints::default(),
        duration: s.duration,
        slots: vec![0, 1],
        holder: false,
        clock_origin: clock.monotonic_origin(),
        resource: service.addr(),
        count_elsewhere: false,
        sent_at: None,
        scenario: s,
    };
    let sinks = WorkerSinks {
        history: history_tx,
        granted: mpsc::unbounded_channel().0,
        control: RunControl::new(2),
        holding: (0..2).map(|_| AtomicBool::new(false)).collect(),
        broken: Default::default(),
    };
    Coordinator {
        clock,
        job,
        sinks,
        history,
        _service: service,
    }
}

/// A worker task as `lockbench worker --coordinator` runs one: dial, read the job, serve it on
/// the in-memory lock. Returns how it ended.
fn spawn_worker(
    addr: SocketAddr,
    name: &str,
    secret: RunSecret,
    idle: Duration,
) -> tokio::task::JoinHandle<Result<(), String>> {
    spawn_worker_on(addr, name, secret, idle, MemoryLocks::new(1, 0), None)
}

/// [`spawn_worker`] on `locks`, with a deliberate clock error `skew`.
fn spawn_worker_on(
    addr: SocketAddr,
    name: &str,
    secret: RunSecret,
    idle: Duration,
    locks: Arc<MemoryLocks>,
    skew: Option<TestSkew>,
) -> tokio::task::JoinHandle<Result<(), String>> {
    let name = name.to_string();
    tokio::spawn(async move {
        let (mut input, output) =
            dial::dial(&addr.to_string(), &name, &secret, Duration::from_secs(5))
                .await
                .map_err(|e| e.to_string())?;
        let mut job = tokio::time::timeout(idle, worker::read_job(&mut input))
            .await
            .map_err(|_| "no job".to_string())?
            .map_err(|e| e.to_string())?;
        if skew.is_some() {
            job.rebase_clock();
        }
        worker::serve(
            MemoryBackend(locks),
            job,
            input,
            output,
            worker::Serving {
                idle: Some(idle),
                skew,
            },
        )
        .await
        .map_err(|e| e.to_string())
    })
}

/// The next worker to dial in, given the job, ready, and started.
async fn admit(listener: &mut Listener, c: &Coordinator, clock: WorkerClock) -> RemoteWorker {
    let arrival = listener.next(Duration::from_secs(10)).await.unwrap();
    let mut w = RemoteWorker::start(arrival, &c.job, c.sinks.clone(), clock)
        .await
        .unwrap();
    w.ready().await.unwrap();
    w.send(ToWorker::Start { at: c.clock.now() });
    w
}

fn drain(history: &mut mpsc::UnboundedReceiver<Vec<Op>>) -> Vec<Op> {
    let mut ops = Vec::new();
    while let Ok(chunk) = history.try_recv() {
        ops.extend(chunk);
    }
    ops
}

/// A worker that knows the secret gets its job, runs it, streams its ops and stats back and
/// answers the coordinator's probes; stopping it ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_the_secret_runs_its_job_and_streams_its_ops() {
    let mut c = coordinator().await;
    let secret = RunSecret::generate();
    let mut listener = Listener::bind("127.0.0.1:0".parse().unwrap(), secret.clone())
        .await
        .unwrap();
    let task = spawn_worker(
        listener.local_addr(),
        "client1",
        secret,
        Duration::from_secs(10),
    );
    let w = admit(&mut listener, &c, WorkerClock::Shared).await;
    assert_eq!(w.name, "client1");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let samples = w.clock_samples();
    let stats = w.finish(Duration::from_secs(10)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the worker ends once stopped")
        .unwrap()
        .unwrap();
    let acquisitions: u64 = stats.iter().map(|s| s.acquisitions_total).sum();
    assert_eq!(stats.len(), 2, "one stats entry per slot");
    assert!(acquisitions > 0, "no acquisitions in 1.5 s");
    let ops = drain(&mut c.history);
    let granted = ops
        .iter()
        .filter(|o| o.f == lockbench_core::OpF::Acquire && o.ty == lockbench_core::OpType::Ok)
        .count() as u64;
    assert_eq!(
        granted, acquisitions,
        "every grant's op reached the history"
    );
    assert!(!samples.is_empty(), "no probe answered in 1.5 s");
    for s in &samples {
        // Same host, same clock: the offset is within the round trip.
        assert!(
            s.offset().unsigned_abs() <= s.half_rtt() + 1_000_000,
            "{s:?}"
        );
    }
    assert!(listener.refused().is_empty());
}

/// A worker with a wrong secret, and a connection that skips the handshake and sends ops, are
/// refused and named by address in the coordinator's log; neither is given a job, and none of
/// their ops reaches the history, while the honest worker's do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_is_refused_and_its_ops_never_reach_the_history() {
    let mut c = coordinator().await;
    let secret = RunSecret::generate();
    let mut listener = Listener::bind("127.0.0.1:0".parse().unwrap(), secret.clone())
        .await
        .unwrap();
    let addr = listener.local_addr();

    // A worker with another secret: dial says it was refused.
    let wrong = RunSecret::generate();
    let err = dial::dial(
        &addr.to_string(),
        "intruder",
        &wrong,
        Duration::from_secs(5),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("refused this worker"), "{err}");

    // A connection that skips the handshake and sends ops (client 99) at once.
    let forged = FromWorker::Ops(vec![Op {
        time: lockbench_core::Nanos(1),
        client: lockbench_core::ClientId(99),
        ty: lockbench_core::OpType::Ok,
        f: lockbench_core::OpF::Acquire,
        key: lockbench_core::KeyId(0),
        token: None,
        error: None,
        stale: None,
        grant: None,
    }]);
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut line = serde_json::to_vec(&forged).unwrap();
    line.push(b'\n');
    raw.write_all(&line).await.unwrap();
    raw.write_all(&line).await.unwrap();
    let mut answer = String::new();
    let n = tokio::time::timeout(
        Duration::from_secs(5),
        BufReader::new(&mut raw).read_line(&mut answer),
    )
    .await
    .expect("the coordinator closes a connection that skips the handshake")
    .unwrap_or(0);
    assert_eq!(n, 0, "answered {answer:?}");

    // The honest worker still gets in and runs.
    let task = spawn_worker(addr, "client1", secret.clone(), Duration::from_secs(10));
    let w = admit(&mut listener, &c, WorkerClock::Shared).await;
    assert_eq!(w.name, "client1", "only the honest worker arrives");
    tokio::time::sleep(Duration::from_millis(300)).await;
    w.finish(Duration::from_secs(10)).await.unwrap();
    task.await.unwrap().unwrap();
    assert!(
        listener.next(Duration::from_millis(200)).await.is_err(),
        "a refused connection arrived"
    );

    let refused = listener.refused();
    assert_eq!(refused.len(), 2, "{refused:?}");
    for line in &refused {
        assert!(
            line.starts_with("refused a worker from 127.0.0.1:"),
            "{line}"
        );
        assert!(
            !line.contains(&secret.to_env_value()),
            "the secret in the log: {line}"
        );
        assert!(
            !line.contains(&wrong.to_env_value()),
            "a secret in the log: {line}"
        );
    }
    assert!(
        refused
            .iter()
            .any(|l| l.contains("\"intruder\" does not know")),
        "{refused:?}"
    );
    let ops = drain(&mut c.history);
    assert!(!ops.is_empty());
    assert!(
        ops.iter().all(|o| o.client.0 < 2 || o.client.0 >= 100),
        "an op from the refused connection reached the history"
    );
    assert!(ops.iter().all(|o| o.client.0 != 99));
}

/// The coordinator going away mid-run (its connection closes) ends the worker at once; a
/// coordinator that stays connected but silent (hung, or cut off) ends it after its idle limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_ends_within_seconds_when_the_coordinator_goes_away() {
    let c = coordinator().await;
    let secret = RunSecret::generate();
    let mut listener = Listener::bind("127.0.0.1:0".parse().unwrap(), secret.clone())
        .await
        .unwrap();
    let addr = listener.local_addr();

    // Closed: the worker stops as soon as it reads the end of the connection.
    let task = spawn_worker(addr, "client1", secret.clone(), Duration::from_secs(30));
    let w = admit(&mut listener, &c, WorkerClock::Shared).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let gone = Instant::now();
    drop(w);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the worker outlived its coordinator's connection by 5 s")
        .unwrap()
        .unwrap();
    assert!(gone.elapsed() < Duration::from_secs(5));

    // Cut off: a partition between them swallows every byte, the connection stays open.
    let idle = Duration::from_secs(1);
    let (proxy, cut) = blackhole_proxy(addr).await;
    let task = spawn_worker(proxy, "client2", secret, idle);
    let w = admit(&mut listener, &c, WorkerClock::Shared).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !task.is_finished(),
        "the worker stopped while probes still arrived"
    );
    cut.store(true, std::sync::atomic::Ordering::SeqCst);
    let since = Instant::now();
    tokio::time::timeout(Duration::from_secs(6), task)
        .await
        .expect("a cut-off worker still ran 6 s later")
        .unwrap()
        .unwrap();
    assert!(since.elapsed() >= idle, "stopped before its idle limit");
    drop(w);
}

/// A TCP proxy to `to` that forwards both ways until the returned flag is set, then swallows
/// every byte while keeping both connections open (a partition, not a close).
async fn blackhole_proxy(to: SocketAddr) -> (SocketAddr, Arc<AtomicBool>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cut = Arc::new(AtomicBool::new(false));
    let flag = cut.clone();
    tokio::spawn(async move {
        let (a, _) = listener.accept().await.unwrap();
        let b = tokio::net::TcpStream::connect(to).await.unwrap();
        let (ar, aw) = a.into_split();
        let (br, bw) = b.into_split();
        let pipe = |flag: Arc<AtomicBool>| {
            move |mut r: tokio::net::tcp::OwnedReadHalf, mut w: tokio::net::tcp::OwnedWriteHalf| async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if !flag.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = w.write_all(&buf[..n]).await;
                    }
                }
                // Keep the write half open: a partition closes nothing.
                std::future::pending::<()>().await;
                drop(w);
            }
        };
        let one = tokio::spawn(pipe(flag.clone())(ar, bw));
        let two = tokio::spawn(pipe(flag)(br, aw));
        let _ = (one.await, two.await);
    });
    (addr, cut)
}

/// Two workers on one (correct) in-memory lock, one whose clock is 250 ms ahead and 80 ppm
/// fast. Mapped onto the coordinator's clock and judged over intervals, their holds never
/// certainly overlap (as raw points they would, wildly); on a deliberately broken lock the
/// overlaps are still found, as certain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_worker_invents_no_overlap_and_hides_no_real_one() {
    let skew = TestSkew {
        // Ahead: a clock behind would read below zero early in the run, which `Nanos` cannot.
        offset_ns: 250_000_000,
        drift_ppm: 80,
    };
    let own = WorkerClock::Own { drift_ppm: 100 };
    let correct = skewed_run(MemoryLocks::new(1, 0), "20ms", skew, own).await;
    eprintln!("correct lock, mapped: {correct:?}");
    assert!(correct.bound_ns > 0, "{correct:?}");
    // The mapping would be no help as wide as the skew (a loaded machine's round trips).
    assert!(
        correct.bound_ns < 100_000_000,
        "a loopback bound of {} ns",
        correct.bound_ns
    );
    assert_eq!(
        correct.overlaps_certain, 0,
        "an invented violation: {correct:?}"
    );

    // The test can fail: the same skew taken at face value overlaps holds that never were.
    let naive = skewed_run(MemoryLocks::new(1, 0), "20ms", skew, WorkerClock::Shared).await;
    eprintln!("correct lock, at face value: {naive:?}");
    assert!(
        naive.overlaps_certain > 0,
        "the skew shows nothing: {naive:?}"
    );

    // Long holds on a broken lock: the clients overlap for hundreds of ms, beyond any bound.
    let broken = skewed_run(MemoryLocks::broken(1), "400ms", skew, own).await;
    eprintln!("broken lock, mapped: {broken:?}");
    assert!(
        broken.overlaps_certain > 0,
        "a real violation hidden: {broken:?}"
    );
}

/// Runs slot 0 on a true clock and slot 1 with `skew` against `locks` (holding each grant for
/// `hold`) for a second, both dialled in, slot 1 mapped as `clock` says; judges the history
/// over intervals.
async fn skewed_run(
    locks: Arc<MemoryLocks>,
    hold: &str,
    skew: TestSkew,
    clock: WorkerClock,
) -> lockbench_analysis::intervals::IntervalJudgement {
    let mut c = coordinator_holding(hold).await;
    let secret = RunSecret::generate();
    let mut listener = Listener::bind("127.0.0.1:0".parse().unwrap(), secret.clone())
        .await
        .unwrap();
    let addr = listener.local_addr();
    let idle = Duration::from_secs(10);
    let mut workers = Vec::new();
    for (slot, skew, clock) in [(0, None, WorkerClock::Shared), (1, Some(skew), clock)] {
        let task = spawn_worker_on(
            addr,
            &format!("client{}", slot + 1),
            secret.clone(),
            idle,
            locks.clone(),
            skew,
        );
        let arrival = listener.next(Duration::from_secs(10)).await.unwrap();
        let mut job = c.job.clone();
        job.slots = vec![slot];
        let w = RemoteWorker::start(arrival, &job, c.sinks.clone(), clock)
            .await
            .unwrap();
        workers.push((w, task));
    }
    // Probes first (the mapping needs one), then one common start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let at = c.clock.now();
    for (w, _) in &mut workers {
        w.ready().await.unwrap();
        w.send(ToWorker::Start { at });
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut bounds = lockbench_analysis::intervals::ClockBounds {
        clients: 2,
        ..Default::default()
    };
    for (w, task) in workers {
        bounds.slots.extend(w.clock_bounds());
        w.finish(Duration::from_secs(10)).await.unwrap();
        task.await.unwrap().unwrap();
    }
    let mut ops = drain(&mut c.history);
    ops.sort_by_key(|o| o.time);
    assert!(ops.len() > 10, "only {} ops", ops.len());
    lockbench_analysis::intervals::judge(&ops, &bounds)
}
