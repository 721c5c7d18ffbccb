//! The client loop: the one piece of lockbench that runs per op.
//!
//! [`run_contention`] connects every client first (so connection set-up is not measured and an
//! unreachable server fails the run before it starts), then runs one task per client slot, on
//! the client threads ([`crate::threads`]: one single-threaded runtime per core, a client's
//! connection driven on the thread its loop runs on):
//!
//! ```text
//! loop: [open loop: sleep until intended start] -> invoke acquire -> ok: write token to the
//!       resource -> hold [renewing every `renew_every`] -> release -> think
//! ```
//!
//! With `workload.renew_every` the hold is a watchdog's: the client renews the lock at that
//! period until the hold is over (each renewal an invoke and a completion in the history, so
//! the checkers judge them), and a renewal that fails ends the hold at once with the release.
//! A renewal that fell due while the process was stopped runs as soon as it resumes, before
//! the hold's end is looked at (a watchdog timer fires late, it is not skipped). Such a hold
//! ends early when the run is stopped, so a run with long holds still ends promptly.
//!
//! An acquire that times out, or any `info` outcome, retires the client (Jepsen's rule: a
//! process that saw an indeterminate result is never reused) and the slot continues with a
//! freshly connected client under a new [`ClientId`]. So does a definite `session-expired`
//! failure (acquire or release): an expired ZooKeeper session never recovers, and retrying on
//! it would keep the slot busy-failing until the end of the run.
//!
//! Rules for this file: no `format!`, no `String`, no locks, no `Arc` clone per op; everything
//! generic over the backend so nothing is dispatched dynamically.
//!
//! The same loop runs in the coordinator and in worker processes ([`run_slots`] with
//! [`SlotOptions`]): a worker runs only its own slots, starts at the coordinator's common start
//! time, and writes to the resource over TCP instead of calling it. The fencing workload's
//! *holder* is this loop with [`HolderHooks`]: after each grant it reports the grant and waits
//! for the coordinator's go-ahead before writing, so the coordinator can stop the process
//! (SIGSTOP) between the grant and the write, exactly where a GC pause hurts.

use crate::connect::ConnectProgress;
use crate::pacer::Pacer;
use crate::plan::ClientPlan;
use crate::recorder::{Recorder, RunOutput};
use crate::resource::{FencedResource, ResourceConn};
use crate::threads::{self, ClientThread};
use lockbench_core::scenario::Workload;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, ClientId, ErrorKind, FencingToken, Grant, KeyId, LockClient, Nanos, Op, OpF, OpType,
    Outcome, RunClock,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
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

/// Which slots a process runs and how they reach the resource; [`SlotOptions::all`] is the
/// in-process default.
#[derive(Debug, Default)]
pub struct SlotOptions {
    /// The slots to run; empty means every slot `0..clients`.
    pub slots: Vec<u32>,
    /// Write to the resource service at this address instead of the in-process resource.
    pub remote_resource: Option<SocketAddr>,
    /// Delivers the run's common start time (every process starts its slots then), after
    /// `connected` fired; `None`: start as soon as the clients are connected.
    pub start: Option<tokio::sync::oneshot::Receiver<Nanos>>,
    /// Makes the first slot the fencing workload's holder.
    pub holder: Option<HolderHooks>,
    /// Told once every client is connected (before the start time).
    pub connected: Option<tokio::sync::oneshot::Sender<()>>,
    /// `workload.acquisitions` is counted by someone else (the coordinator, over every
    /// process's slots): these slots run until stopped instead of counting down themselves.
    pub count_elsewhere: bool,
}

impl SlotOptions {
    /// Every slot, in process, starting when connected.
    pub fn all() -> SlotOptions {
        SlotOptions::default()
    }
}

/// A grant the holder reports before it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    /// The holder's slot.
    pub slot: u32,
    /// The client (generation) that was granted.
    pub client: ClientId,
    /// The key.
    pub key: KeyId,
    /// Its token.
    pub token: Option<FencingToken>,
    /// When the grant arrived.
    pub time: Nanos,
}

/// The holder's side of the fencing handshake.
#[derive(Debug)]
pub struct HolderHooks {
    /// Each grant is reported here ...
    pub granted: UnboundedSender<Granted>,
    /// ... and the holder writes once a go-ahead arrives here.
    pub go: UnboundedReceiver<()>,
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
    run_slots(backend, run, control, SlotOptions::all()).await
}

/// [`run_contention`] for some of the slots, in a worker process or beside one: see
/// [`SlotOptions`].
pub async fn run_slots<B: Backend>(
    backend: Arc<B>,
    run: ContentionRun,
    control: RunControl,
    mut options: SlotOptions,
) -> Result<RunOutput, BackendError> {
    let slots: Vec<u32> = if options.slots.is_empty() {
        (0..run.workload.clients).collect()
    } else {
        options.slots.clone()
    };
    let groups = threads::deal(&slots);
    let progress = Arc::new(ConnectProgress::new(slots.len(), groups.len()));
    let mut threads: Vec<_> = groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| ClientThread::start(i, backend.clone(), group, progress.clone()))
        .collect();
    for thread in &mut threads {
        thread.connected().await?;
    }

    if let Some(tx) = options.connected.take() {
        let _ = tx.send(());
    }
    let start = match options.start.take() {
        Some(at) => {
            let mut stop = control.stop.subscribe();
            let at = tokio::select! {
                at = at => at.unwrap_or_else(|_| run.clock.now()),
                _ = stop.wait_for(|s| *s) => run.clock.now(),
            };
            tokio::select! {
                _ = tokio::time::sleep_until(run.clock.instant_at(at).into()) => {}
                _ = stop.wait_for(|s| *s) => {}
            }
            at
        }
        None => run.clock.now(),
    };
    let measure_start = start.after(run.warmup);
    let by_count = run.workload.acquisitions;
    let measure_end = if by_count.is_some() && run.duration.is_zero() {
        Nanos(u64::MAX)
    } else {
        measure_start.after(run.duration)
    };
    let shared = Arc::new(Shared {
        backend,
        remaining: by_count
            .filter(|_| !options.count_elsewhere)
            .map(AtomicU64::new),
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

    let mut holder = options.holder.take();
    for thread in &mut threads {
        let shared = shared.clone();
        let remote = options.remote_resource;
        // The first slot is the first thread's first: the fencing holder, when there is one.
        let mut hooks = holder.take();
        thread.go(Box::new(move |client, slot| {
            let resource = match remote {
                Some(addr) => ResourceConn::remote(addr),
                None => ResourceConn::Local(shared.run.resource.clone()),
            };
            Box::pin(client_loop(
                shared.clone(),
                slot,
                client,
                start,
                resource,
                hooks.take(),
            ))
        }));
    }
    let mut workers = Vec::with_capacity(slots.len());
    for thread in threads {
        workers.extend(thread.finish().await);
    }
    workers.sort_by_key(|w| w.slot);
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
    mut resource: ResourceConn,
    mut holder: Option<HolderHooks>,
) -> crate::recorder::WorkerStats {
    let run = &shared.run;
    let clock = run.clock;
    let workload = &run.workload;
    let slowdown = workload.slowdown.as_ref().and_then(|s| s.fixed());
    let mut rec = Recorder::new(slot, run.history.clone());
    let mut plan = ClientPlan::new(workload, run.seed, slot);
    let mut pacer = Pacer::new(workload.rate, slot, workload.clients, start);
    let mut stop = shared.control.stop.subscribe();
    let mut generation = 0u32;
    let mut id = ClientId(slot);
    // Exclusive grants of `id` so far: a write names the one it is made under (`Op::grant`).
    let mut grants = 0u32;

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
        // Drawn whatever the recipe, so its seeded choices do not depend on it; a recipe
        // without a shared mode takes (and records) every acquire exclusively.
        let shared_mode = plan.next_shared() && client.shared_mode();
        let f = if shared_mode {
            OpF::AcquireShared
        } else {
            OpF::Acquire
        };
        let sent = clock.now();
        rec.push(Op::invoke(intended, id, f, key));
        let acquire = async {
            if shared_mode {
                client.acquire_shared(key).await
            } else {
                client.acquire(key).await
            }
        };
        let outcome = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => None,
            r = tokio::time::timeout(workload.acquire_timeout, acquire) => Some(r),
        };
        // The injected slowdown: the grant is the client's, and it answers late, holding the
        // lock meanwhile (a stop cuts the wait short: the grant is recorded, but its latency,
        // shorter than the delay, is not measured). Waited with the operating system's sleep
        // on a blocking thread: within tens of microseconds, where the runtime's timers round
        // up to the next millisecond.
        let mut cut_short = false;
        if let (Some(slowdown), Some(Ok(Outcome::Ok(_)))) = (slowdown, &outcome) {
            let wait = tokio::task::spawn_blocking(move || std::thread::sleep(slowdown));
            tokio::select! {
                _ = wait => {}
                _ = stop.wait_for(|s| *s) => cut_short = true,
            }
        }
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
                    f,
                    key,
                    OpType::Info,
                    None,
                    Some(ErrorKind::Timeout),
                );
                retire = true;
            }
            Some(Ok(Outcome::Info(e))) => {
                rec.complete(done, id, f, key, OpType::Info, None, Some(e));
                retire = true;
            }
            Some(Ok(Outcome::Fail(e))) => {
                rec.complete(done, id, f, key, OpType::Fail, None, Some(e));
                // A definite failure (no quorum, unavailable): back off briefly so a dead
                // cluster is not hammered in a tight loop.
                tokio::time::sleep(Duration::from_millis(10)).await;
                // An expired session never comes back: only a new client can go on.
                retire = e == ErrorKind::SessionExpired;
            }
            Some(Ok(Outcome::Ok(grant))) => {
                rec.complete(done, id, f, key, OpType::Ok, grant.token, None);
                if !shared_mode {
                    grants += 1;
                }
                let measured =
                    !cut_short && intended >= shared.measure_start && done <= shared.measure_end;
                rec.granted(measured, intended, sent, done);
                shared.control.progress[slot as usize]
                    .store(rec.stats.acquisitions_total, Ordering::Relaxed);
                if measured {
                    count_towards_target(&shared);
                }

                if let Some(h) = holder.as_mut() {
                    // The fencing holder: report the grant, then wait (possibly stopped by the
                    // coordinator meanwhile) for the go-ahead before writing.
                    rec.flush();
                    let _ = h.granted.send(Granted {
                        slot,
                        client: id,
                        key,
                        token: grant.token,
                        time: done,
                    });
                    tokio::select! {
                        _ = h.go.recv() => {}
                        _ = stop.wait_for(|s| *s) => break,
                    }
                }
                if shared_mode {
                    // A reader: shared holders never write to the protected resource.
                } else if resource.records_itself() {
                    if let Err(e) = resource.write(key, grant.token, id, grants).await {
                        tracing::warn!(client = %id, error = %e, "resource service write failed");
                    }
                } else {
                    // Invoked and completed around the resource's decision: the interval the
                    // fencing audit orders writes by.
                    let mut invoked = Op::invoke(clock.now(), id, OpF::Write, key);
                    invoked.grant = Some(grants);
                    rec.push(invoked);
                    if let Ok(verdict) = resource.write(key, grant.token, id, grants).await {
                        let mut done = verdict.op(clock.now(), id, key, grant.token);
                        done.grant = Some(grants);
                        rec.push(done);
                    }
                }

                let hold = plan.hold();
                if !hold.is_zero() && holder.is_none() {
                    match workload.renew_every {
                        None => tokio::time::sleep(hold).await,
                        Some(every) => {
                            let held = Held {
                                id,
                                grant: &grant,
                                clock,
                            };
                            let h =
                                hold_renewing(&mut client, held, hold, every, &mut rec, &mut stop);
                            retire |= h.await;
                        }
                    }
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
                        rec.complete(done, id, OpF::Release, key, OpType::Fail, token, Some(e));
                        retire |= e == ErrorKind::SessionExpired;
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
            grants = 0;
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

/// A lock held by the client loop: who holds it, the grant, the run's clock.
struct Held<'g, H> {
    id: ClientId,
    grant: &'g Grant<H>,
    clock: RunClock,
}

/// Holds `held` for `hold`, renewing it every `every` (see the module docs); each renewal may
/// take at most `every` (a slower one is recorded as an indeterminate timeout). Returns
/// `true` when a renewal's outcome retires the client (indeterminate, or the session
/// expired); a renewal that failed otherwise (`lock-lost`) ends the hold early without
/// retiring it.
async fn hold_renewing<C: LockClient>(
    client: &mut C,
    held: Held<'_, C::Handle>,
    hold: Duration,
    every: Duration,
    rec: &mut Recorder,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    let Held { id, grant, clock } = held;
    let start = tokio::time::Instant::now();
    let end = start + hold;
    let mut due = start + every;
    let (key, token) = (grant.key, grant.token);
    loop {
        let wake = due.min(end);
        tokio::select! {
            _ = tokio::time::sleep_until(wake) => {}
            _ = stop.wait_for(|s| *s) => return false,
        }
        let now = tokio::time::Instant::now();
        if now < due {
            // The hold is over before the next renewal.
            return false;
        }
        rec.push(Op::invoke(clock.now(), id, OpF::Renew, key));
        let renewed = tokio::select! {
            r = tokio::time::timeout(every, client.renew(grant)) => r,
            // Stopped mid-renewal: the renew stays open in the history (indeterminate).
            _ = stop.wait_for(|s| *s) => return false,
        };
        let (ty, error) = match renewed {
            Ok(Outcome::Ok(())) => (OpType::Ok, None),
            Ok(Outcome::Fail(e)) => (OpType::Fail, Some(e)),
            Ok(Outcome::Info(e)) => (OpType::Info, Some(e)),
            Err(_) => (OpType::Info, Some(ErrorKind::Timeout)),
        };
        rec.complete(clock.now(), id, OpF::Renew, key, ty, token, error);
        match ty {
            OpType::Ok => {}
            OpType::Fail => return error == Some(ErrorKind::SessionExpired),
            _ => return true,
        }
        let now = tokio::time::Instant::now();
        if now >= end {
            return false;
        }
        // As Redisson's watchdog does: the next renewal is scheduled when this one has
        // succeeded, so a late one (the process was stopped) is not followed by a burst.
        due = now + every;
    }
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
        // Bounded and stoppable: behind a partition a connect can hang for minutes (SYNs
        // dropped), and the run must still end on time and retry soon after the heal.
        let attempt = tokio::select! {
            r = tokio::time::timeout(shared.run.workload.acquire_timeout, shared.backend.connect(id)) => r,
            _ = stop.wait_for(|s| *s) => return None,
        };
        match attempt {
            Ok(Ok(c)) => return Some(c),
            Err(_) => {
                tracing::warn!(client = %id, "replacement client could not connect in time; retrying");
            }
            Ok(Err(e)) => {
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
