//! The coordinator's side of one worker's conversation ([`crate::worker`]'s protocol), whatever
//! bytes carry it: a child process's pipes ([`WorkerProcess`](crate::WorkerProcess)) or a TCP
//! connection the worker dialled in on ([`RemoteWorker`](crate::remote::RemoteWorker)). It
//! lives here once, so both kinds of worker get the same job line, the same commands in order,
//! the same probe every [`PROBE_EVERY`] (the heartbeat a dialled-in worker watches, and the
//! samples [`crate::clock`] turns into an offset), and the same handling of what comes back.

use crate::clock::{ClockMap, ProbeSample};
use crate::recorder::WorkerStats;
use crate::worker::{FromWorker, Job, ToWorker, WorkerSinks, send_line};
use lockbench_core::Op;
use lockbench_core::{Nanos, OpF, OpType, RunClock};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How often the coordinator probes a worker.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// Probes in flight and the samples of those answered; for a worker on its own clock, the
/// largest uncertainty of its ops' mapped times per slot.
#[derive(Debug, Default)]
pub(crate) struct Probes {
    sent: HashMap<u64, Nanos>,
    pub(crate) samples: Vec<ProbeSample>,
    pub(crate) bounds: BTreeMap<u32, u64>,
}

/// Whose clock a worker stamps its ops with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerClock {
    /// The coordinator's: a process on this machine, on the job's `CLOCK_MONOTONIC` origin.
    /// Its ops go into the history as they come.
    Shared,
    /// Its own (a worker that dialled in, possibly from another host): every op's time is
    /// mapped onto the coordinator's clock ([`ClockMap`], with this drift allowance in ppm),
    /// and the uncertainty of the mapping is kept per slot.
    Own {
        /// The drift allowance, parts per million.
        drift_ppm: u64,
    },
}

/// The coordinator's end of one worker's conversation.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) commands: mpsc::UnboundedSender<ToWorker>,
    writer: JoinHandle<()>,
    ready: Option<oneshot::Receiver<Result<(), String>>>,
    reader: Option<JoinHandle<Result<Vec<WorkerStats>, String>>>,
    pub(crate) probes: Arc<Mutex<Probes>>,
}

impl Link {
    /// Sends `job` on `output`, then serves commands and probes on it, and reads the worker's
    /// messages from `input` into `sinks`.
    pub(crate) async fn start(
        input: impl AsyncBufRead + Unpin + Send + 'static,
        mut output: impl AsyncWrite + Unpin + Send + 'static,
        job: &Job,
        sinks: WorkerSinks,
        own: WorkerClock,
    ) -> io::Result<Link> {
        let clock = RunClock::from_monotonic_origin(job.clock_origin);
        let mut job = job.clone();
        job.sent_at = Some(clock.now());
        send_line(&mut output, &ToWorker::Job(Box::new(job))).await?;
        let probes = Arc::new(Mutex::new(Probes::default()));
        let (commands, mut rx) = mpsc::unbounded_channel::<ToWorker>();
        let writer = {
            let probes = probes.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(PROBE_EVERY);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut seq = 0u64;
                loop {
                    let msg = tokio::select! {
                        m = rx.recv() => match m {
                            Some(m) => m,
                            None => break,
                        },
                        _ = tick.tick() => {
                            seq += 1;
                            lock(&probes).sent.insert(seq, clock.now());
                            ToWorker::Probe { seq }
                        }
                    };
                    if send_line(&mut output, &msg).await.is_err() {
                        break;
                    }
                }
                // Dropping `output` closes it: the worker stops if it has not yet.
            })
        };
        let (ready_tx, ready_rx) = oneshot::channel();
        let reader = tokio::spawn(read_messages(
            input,
            sinks,
            ready_tx,
            (clock, own),
            probes.clone(),
        ));
        Ok(Link {
            commands,
            writer,
            ready: Some(ready_rx),
            reader: Some(reader),
            probes,
        })
    }

    /// Waits until every client of the worker `name` is connected.
    pub(crate) async fn ready(&mut self, name: &str) -> Result<(), String> {
        match self.ready.take() {
            Some(rx) => rx
                .await
                .unwrap_or_else(|_| Err(format!("{name} exited before it was ready"))),
            None => Ok(()),
        }
    }

    /// Tells the worker `name` to stop and waits up to `budget` for its stats; stops writing.
    pub(crate) async fn finish(
        &mut self,
        name: &str,
        budget: Duration,
    ) -> Result<Vec<WorkerStats>, String> {
        let _ = self.commands.send(ToWorker::Stop);
        let reader = self.reader.take().expect("finish is called once");
        let stats = match tokio::time::timeout(budget, reader).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(format!("{name}: reader failed: {e}")),
            Err(_) => Err(format!("{name} did not finish within {budget:?}")),
        };
        self.writer.abort();
        stats
    }

    /// The clock samples so far.
    pub(crate) fn samples(&self) -> Vec<ProbeSample> {
        lock(&self.probes).samples.clone()
    }

    /// Per slot, the largest uncertainty (half-width, ns) of a mapped op time so far; empty
    /// for a worker on the coordinator's clock.
    pub(crate) fn bounds(&self) -> BTreeMap<u32, u64> {
        lock(&self.probes).bounds.clone()
    }
}

/// A worker's clock probes and bounds, readable after its handle is gone (the coordinator
/// reports them once the worker has finished, when every op has been mapped).
#[derive(Clone, Debug)]
pub struct ClockTap(Arc<Mutex<Probes>>);

impl ClockTap {
    /// The answered probes.
    pub fn samples(&self) -> Vec<ProbeSample> {
        lock(&self.0).samples.clone()
    }

    /// Per slot, the largest uncertainty (half-width, ns) of a mapped op time.
    pub fn bounds(&self) -> BTreeMap<u32, u64> {
        lock(&self.0).bounds.clone()
    }
}

impl Link {
    /// A tap on the clock probes.
    pub(crate) fn tap(&self) -> ClockTap {
        ClockTap(self.probes.clone())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.writer.abort();
        if let Some(r) = &self.reader {
            r.abort();
        }
    }
}

fn lock(p: &Mutex<Probes>) -> std::sync::MutexGuard<'_, Probes> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

async fn read_messages(
    input: impl AsyncBufRead + Unpin,
    sinks: WorkerSinks,
    ready: oneshot::Sender<Result<(), String>>,
    (clock, own): (RunClock, WorkerClock),
    probes: Arc<Mutex<Probes>>,
) -> Result<Vec<WorkerStats>, String> {
    let mut ready = Some(ready);
    // Ops of a worker on its own clock not mapped yet: each waits for a probe answered after
    // it (a probe on either side bounds its time far better than one side alone: the first
    // probe's round trip includes the worker's start, and a probe queued behind a pause is
    // answered late), or for the end.
    let mut unmapped: Vec<Op> = Vec::new();
    let clients = sinks.control.progress.len() as u32;
    let map_ready = |unmapped: &mut Vec<Op>, all: bool| -> Vec<Op> {
        let WorkerClock::Own { drift_ppm } = own else {
            return std::mem::take(unmapped);
        };
        let mut p = lock(&probes);
        let Some(map) = ClockMap::new(p.samples.clone(), drift_ppm) else {
            return Vec::new();
        };
        let latest = p.samples.iter().map(|s| s.worker).max().unwrap_or(Nanos(0));
        // Chunks of a worker's several clients interleave: not one time order.
        let (ready, wait): (Vec<Op>, Vec<Op>) =
            unmapped.drain(..).partition(|o| all || o.time <= latest);
        *unmapped = wait;
        map_ops(&map, ready, clients, &mut p.bounds)
    };
    let mut lines = input.lines();
    let mut error = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let msg = match serde_json::from_str::<FromWorker>(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "worker sent a bad line");
                continue;
            }
        };
        match msg {
            FromWorker::Ready { .. } => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Ok(()));
                }
            }
            FromWorker::Ops(mut ops) => {
                // Progress and who holds now, as the ops arrive (faults target the holder).
                for op in &ops {
                    let slot = (op.client.0 % clients) as usize;
                    match (op.f, op.ty) {
                        (OpF::Acquire, OpType::Ok) => {
                            sinks.control.progress[slot].fetch_add(1, Ordering::Relaxed);
                            sinks.holding[slot].store(true, Ordering::Relaxed);
                        }
                        (OpF::Release, OpType::Invoke) => {
                            sinks.holding[slot].store(false, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
                unmapped.append(&mut ops);
                let ops = map_ready(&mut unmapped, false);
                if !ops.is_empty() {
                    let _ = sinks.history.send(ops);
                }
            }
            FromWorker::Granted(g) => {
                let _ = sinks.granted.send(g);
            }
            FromWorker::Probe { seq, at } => {
                let received = clock.now();
                let answered = {
                    let mut p = lock(&probes);
                    match p.sent.remove(&seq) {
                        Some(sent) => {
                            p.samples.push(ProbeSample {
                                sent,
                                worker: at,
                                received,
                            });
                            true
                        }
                        None => false,
                    }
                };
                if answered && !unmapped.is_empty() {
                    let ops = map_ready(&mut unmapped, false);
                    if !ops.is_empty() {
                        let _ = sinks.history.send(ops);
                    }
                }
            }
            FromWorker::Stats(stats) => {
                // The end: what still waits is mapped with the probes there are.
                let ops = map_ready(&mut unmapped, true);
                if !ops.is_empty() {
                    let _ = sinks.history.send(ops);
                }
                return stats.into_iter().map(WorkerStats::try_from).collect();
            }
            FromWorker::Broken(why) => {
                tracing::error!("{why}");
                let mut first = sinks.broken.lock().unwrap_or_else(|e| e.into_inner());
                if first.is_none() {
                    *first = Some(why);
                }
                drop(first);
                sinks.control.stop.send_replace(true);
            }
            FromWorker::Error(e) => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(e.clone()));
                }
                error = Some(e);
            }
        }
    }
    let ops = map_ready(&mut unmapped, true);
    if !ops.is_empty() {
        let _ = sinks.history.send(ops);
    }
    if !unmapped.is_empty() {
        tracing::warn!(
            n = unmapped.len(),
            "a worker on its own clock sent ops but never answered a probe: they are dropped \
             (their times cannot be put on the run's clock)"
        );
    }
    let e = error.unwrap_or_else(|| "worker exited without sending its stats".into());
    if let Some(r) = ready.take() {
        let _ = r.send(Err(e.clone()));
    }
    Err(e)
}

/// Puts `ops` (stamped by a worker's own clock) on the coordinator's clock: each time becomes
/// the midpoint of its interval, and `bounds` keeps each slot's largest half-width.
fn map_ops(
    map: &ClockMap,
    mut ops: Vec<Op>,
    clients: u32,
    bounds: &mut BTreeMap<u32, u64>,
) -> Vec<Op> {
    for op in &mut ops {
        let i = map.map(op.time);
        op.time = Nanos(i.lo.0 + i.width() / 2);
        let b = bounds.entry(op.client.0 % clients).or_insert(0);
        *b = (*b).max(i.width().div_ceil(2));
    }
    ops
}
