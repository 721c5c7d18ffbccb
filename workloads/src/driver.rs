//! The client loop: the one piece of lockbench that runs per op.
//!
//! [`run_contention`] connects every client first (so connection set-up is not measured and an
//! unreachable server fails the run before it starts), then runs one task per client slot:
//!
//! ```text
//! loop: [open loop: sleep until intended start] -> invoke acquire -> ok: write token to the
//!       resource -> hold -> release -> think
//! ```
//!
//! An acquire that times out, or any `info` outcome, retires the client (Jepsen's rule: a
//! process that saw an indeterminate result is never reused) and the slot continues with a
//! freshly connected client under a new [`ClientId`].
//!
//! Rules for this file: no `format!`, no `String`, no locks, no `Arc` clone per op; everything
//! generic over the backend so nothing is dispatched dynamically.

use crate::pacer::Pacer;
use crate::plan::ClientPlan;
use crate::recorder::{Recorder, RunOutput};
use crate::resource::FencedResource;
use lockbench_core::scenario::Workload;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, ClientId, ErrorKind, LockClient, Nanos, Op, OpF, OpType, Outcome, RunClock,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

/// How long a retired client gets to close before it is dropped.
const CLOSE_BUDGET: Duration = Duration::from_secs(5);

/// The parameters of one contention run of one backend.
#[derive(Debug, Clone)]
pub struct ContentionRun {
    /// The workload (clients, keys, hold, think, rate, count, timeout).
    pub workload: Workload,
    /// Scenario seed.
    pub seed: u64,
    /// Warm-up before measuring.
    pub warmup: Duration,
    /// Measured duration (ignored when the workload stops by count and this is zero).
    pub duration: Duration,
    /// The run's clock.
    pub clock: RunClock,
    /// The protected resource holders write their tokens to.
    pub resource: Arc<FencedResource>,
    /// Where op chunks go (the history writer).
    pub history: UnboundedSender<Vec<Op>>,
}

/// Shared controls: stop the run early, and watch its progress.
#[derive(Debug, Clone)]
pub struct RunControl {
    /// Set to `true` to stop every client (Ctrl-C, or the end of the run).
    pub stop: watch::Sender<bool>,
    /// Acquisitions so far per slot (relaxed; for progress display only).
    pub progress: Arc<[AtomicU64]>,
}

impl RunControl {
    /// Controls for `clients` slots.
    pub fn new(clients: u32) -> RunControl {
        RunControl {
            stop: watch::channel(false).0,
            progress: (0..clients).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Total acquisitions so far.
    pub fn acquisitions(&self) -> u64 {
        self.progress
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }

    /// `true` once the run has been told to stop.
    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }
}

/// What every slot shares (read-only apart from the count-mode budget).
struct Shared<B> {
    backend: Arc<B>,
    run: ContentionRun,
    control: RunControl,
    measure_start: Nanos,
    measure_end: Nanos,
    /// Measured acquisitions still wanted in count mode.
    remaining: Option<AtomicU64>,
}

/// Runs the contention workload of `run` against `backend` until the duration (or count) is
/// reached or `control.stop` is set. Fails before starting if a client cannot connect.
pub async fn run_contention<B: Backend>(
    backend: Arc<B>,
    run: ContentionRun,
    control: RunControl,
) -> Result<RunOutput, BackendError> {
    let clients = run.workload.clients;
    let connected =
        futures::future::join_all((0..clients).map(|slot| backend.connect(ClientId(slot)))).await;
    let mut ready = Vec::with_capacity(clients as usize);
    let mut first_error = None;
    for c in connected {
        match c {
            Ok(c) => ready.push(c),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    if let Some(e) = first_error {
        for c in ready {
            c.close().await;
        }
        return Err(e);
    }

    let start = run.clock.now();
    let measure_start = start.after(run.warmup);
    let by_count = run.workload.acquisitions;
    let measure_end = if by_count.is_some() && run.duration.is_zero() {
        Nanos(u64::MAX)
    } else {
        measure_start.after(run.duration)
    };
    let shared = Arc::new(Shared {
        backend,
        remaining: by_count.map(AtomicU64::new),
        run,
        control: control.clone(),
        measure_start,
        measure_end,
    });

    let timer = (measure_end != Nanos(u64::MAX)).then(|| {
        let stop = control.stop.clone();
        let at = shared.run.clock.instant_at(measure_end);
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            stop.send_replace(true);
        })
    });

    let tasks: Vec<_> = ready
        .into_iter()
        .enumerate()
        .map(|(slot, client)| tokio::spawn(client_loop(shared.clone(), slot as u32, client, start)))
        .collect();
    let mut workers = Vec::with_capacity(tasks.len());
    for t in tasks {
        workers.push(t.await.expect("client loop panicked"));
    }
    if let Some(t) = timer {
        t.abort();
    }
    let interrupted = shared.run.clock.now() < measure_end
        && measure_end != Nanos(u64::MAX)
        && shared
            .remaining
            .as_ref()
            .is_none_or(|r| r.load(Ordering::Relaxed) > 0);
    let stopped_at = shared.run.clock.now().min(measure_end);
    Ok(RunOutput {
        workers,
        measure_start,
        measure_end: stopped_at.max(measure_start),
        interrupted,
    })
}

async fn client_loop<B: Backend>(
    shared: Arc<Shared<B>>,
    slot: u32,
    mut client: B::Client,
    start: Nanos,
) -> crate::recorder::WorkerStats {
    let run = &shared.run;
    let clock = run.clock;
    let workload = &run.workload;
    let mut rec = Recorder::new(slot, run.history.clone());
    let mut plan = ClientPlan::new(workload, run.seed, slot);
    let mut pacer = Pacer::new(workload.rate, slot, workload.clients, start);
    let mut stop = shared.control.stop.subscribe();
    let mut generation = 0u32;
    let mut id = ClientId(slot);

    loop {
        if *stop.borrow() {
            break;
        }
        let now = clock.now();
        let intended = pacer.next_start(now);
        if pacer.is_open() && intended > now {
            tokio::select! {
                _ = tokio::time::sleep_until(clock.instant_at(intended).into()) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        let key = plan.next_key();
        let sent = clock.now();
        rec.push(Op::invoke(intended, id, OpF::Acquire, key));
        let outcome = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => None,
            r = tokio::time::timeout(workload.acquire_timeout, client.acquire(key)) => Some(r),
        };
        let done = clock.now();
        let mut retire = false;
        match outcome {
            // Stopped while waiting: the acquire never completes in the history (Jepsen
            // leaves such ops open; checkers treat them as indeterminate).
            None => break,
            Some(Err(_elapsed)) => {
                rec.complete(
                    done,
                    id,
                    OpF::Acquire,
                    key,
                    OpType::Info,
                    None,
                    Some(ErrorKind::Timeout),
                );
                retire = true;
            }
            Some(Ok(Outcome::Info(e))) => {
                rec.complete(done, id, OpF::Acquire, key, OpType::Info, None, Some(e));
                retire = true;
            }
            Some(Ok(Outcome::Fail(e))) => {
                rec.complete(done, id, OpF::Acquire, key, OpType::Fail, None, Some(e));
                // A definite failure (no quorum, unavailable): back off briefly so a dead
                // cluster is not hammered in a tight loop.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Some(Ok(Outcome::Ok(grant))) => {
                rec.complete(done, id, OpF::Acquire, key, OpType::Ok, grant.token, None);
                let measured = intended >= shared.measure_start && done <= shared.measure_end;
                rec.granted(measured, intended, sent, done);
                shared.control.progress[slot as usize]
                    .store(rec.stats.acquisitions_total, Ordering::Relaxed);
                if measured {
                    count_towards_target(&shared);
                }

                let verdict = run.resource.write(key, grant.token);
                let mut write = Op::complete(
                    clock.now(),
                    id,
                    OpF::Write,
                    key,
                    if verdict.accepted {
                        OpType::Ok
                    } else {
                        OpType::Fail
                    },
                    grant.token,
                    (!verdict.accepted).then_some(ErrorKind::StaleToken),
                );
                write.stale = verdict.stale;
                rec.push(write);

                let hold = plan.hold();
                if !hold.is_zero() {
                    tokio::time::sleep(hold).await;
                }
                let token = grant.token;
                rec.push(Op::invoke(clock.now(), id, OpF::Release, key));
                let released =
                    tokio::time::timeout(workload.acquire_timeout, client.release(grant)).await;
                let done = clock.now();
                match released {
                    Ok(Outcome::Ok(())) => {
                        rec.complete(done, id, OpF::Release, key, OpType::Ok, token, None)
                    }
                    Ok(Outcome::Fail(e)) => {
                        rec.complete(done, id, OpF::Release, key, OpType::Fail, token, Some(e))
                    }
                    Ok(Outcome::Info(e)) => {
                        rec.complete(done, id, OpF::Release, key, OpType::Info, token, Some(e));
                        retire = true;
                    }
                    Err(_) => {
                        rec.complete(
                            done,
                            id,
                            OpF::Release,
                            key,
                            OpType::Info,
                            token,
                            Some(ErrorKind::Timeout),
                        );
                        retire = true;
                    }
                }
            }
        }

        if retire {
            generation += 1;
            id = ClientId(slot + generation * workload.clients);
            let Some(fresh) = reconnect(&shared, id, &mut stop).await else {
                break;
            };
            let old = std::mem::replace(&mut client, fresh);
            rec.add_requests(old.requests_sent());
            let _ = tokio::time::timeout(CLOSE_BUDGET, old.close()).await;
            rec.stats.clients_replaced += 1;
        }

        let think = plan.think();
        if !think.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(think) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    rec.add_requests(client.requests_sent());
    let _ = tokio::time::timeout(CLOSE_BUDGET, client.close()).await;
    rec.finish()
}

fn count_towards_target<B>(shared: &Shared<B>) {
    if let Some(remaining) = &shared.remaining {
        let before = remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .unwrap_or(0);
        if before == 1 {
            shared.control.stop.send_replace(true);
        }
    }
}

/// Connects a replacement client, retrying with backoff until it works or the run stops.
async fn reconnect<B: Backend>(
    shared: &Shared<B>,
    id: ClientId,
    stop: &mut watch::Receiver<bool>,
) -> Option<B::Client> {
    let mut backoff = Duration::from_millis(50);
    loop {
        if *stop.borrow() {
            return None;
        }
        match shared.backend.connect(id).await {
            Ok(c) => return Some(c),
            Err(e) => {
                tracing::warn!(client = %id, error = %e, "replacement client could not connect; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stop.wait_for(|s| *s) => return None,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
