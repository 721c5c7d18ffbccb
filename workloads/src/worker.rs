//! Client slots in their own OS processes (`lockbench worker`), and the coordinator's handle
//! on them.
//!
//! Why processes: a fault must be able to pause (SIGSTOP) or cut off a *real* client, with its
//! heartbeats, keep-alives and session pings, the way a GC pause or a dead NIC does. Pausing a
//! task inside the coordinator is not a pause: the runtime's other tasks would keep the session
//! alive. So a client that a fault targets runs the ordinary client loop ([`crate::driver`]) in
//! a worker process of the same binary, and the coordinator stays the one command the user runs.
//!
//! Protocol: JSON lines over the worker's stdin/stdout ([`ToWorker`], [`FromWorker`]).
//!
//! ```text
//! coordinator -> worker: {"job":{..}}            backend, endpoints, knobs, slots, clock origin
//! worker -> coordinator: {"ready":{"pid":..}}    every client connected
//! coordinator -> worker: {"start":{"at":..}}     common start, on the run clock
//! worker -> coordinator: {"ops":[..]} ...        op chunks as the recorder ships them
//!                        {"granted":{..}}        fencing holder only; then waits for "write"
//! coordinator -> worker: "write" | "stop"
//! worker -> coordinator: {"stats":[..]}          per-slot counts, HdrHistograms as V2-deflate hex
//!                        {"broken":".."}         a client's adapter broke its protocol (any time)
//! ```
//!
//! Every process stamps ops on the same clock: the job carries the coordinator's run-clock
//! origin as raw `CLOCK_MONOTONIC` nanoseconds ([`RunClock::from_monotonic_origin`]). Histograms
//! travel V2-deflate serialized so the coordinator merges them exactly.
//!
//! Nothing is left behind: workers are spawned with `PR_SET_PDEATHSIG = SIGKILL` (set in
//! `pre_exec`, so even a `kill -9` of the coordinator takes them down), `kill_on_drop`, and an
//! explicit kill in [`WorkerProcess::finish`] when a worker overstays. A worker also stops when
//! its stdin closes. Caveat: PDEATHSIG fires when the *thread* that forked dies, so workers
//! must be spawned from a long-lived runtime thread, never from `spawn_blocking`.

use crate::driver::{Granted, HolderHooks, RunControl, SlotOptions, run_slots};
use crate::link::{Link, WorkerClock};
use crate::recorder::{RunOutput, WorkerStats, latency_histogram};
use crate::{ContentionRun, FencedResource};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use lockbench_core::{
    Backend, BackendKind, Endpoints, ErrorKind, Nanos, Op, OpF, OpType, RunClock, Scenario,
};
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot};

/// Everything a worker needs to run its part of a scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// Which recipe.
    pub backend: BackendKind,
    /// Where the servers are, as the worker's host sees them.
    pub endpoints: Endpoints,
    /// The scenario (workload, knobs, seed, warm-up).
    pub scenario: Scenario,
    /// The measured duration (the scenario's, plus recovery when faults are scheduled).
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
    /// The client slots this worker runs.
    pub slots: Vec<u32>,
    /// The first slot is the fencing workload's holder.
    pub holder: bool,
    /// The run clock's origin, raw `CLOCK_MONOTONIC` nanoseconds.
    pub clock_origin: u64,
    /// The resource service.
    pub resource: SocketAddr,
    /// `workload.acquisitions` is counted by the coordinator over every process (it says
    /// stop): the worker does not count down on its own.
    #[serde(default)]
    pub count_elsewhere: bool,
    /// The coordinator's run time when it sent the job, for a worker on another machine,
    /// where `clock_origin` means nothing ([`Job::rebase_clock`]).
    #[serde(default)]
    pub sent_at: Option<Nanos>,
}

impl Job {
    /// For a worker on its own clock (dialled in, perhaps from another machine, whose
    /// `CLOCK_MONOTONIC` has another zero): starts its run clock so that the job's arrival
    /// reads the coordinator's time of sending. Off by the one-way delay and later drift,
    /// which the coordinator's probes measure ([`crate::clock`]); the common start time then
    /// means nearly the same instant on both sides.
    pub fn rebase_clock(&mut self) {
        if let Some(at) = self.sent_at {
            self.clock_origin = lockbench_core::time::monotonic_nanos().saturating_sub(at.0);
        }
    }
}

/// A message to a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// The job (first message).
    Job(Box<Job>),
    /// Start the slots at this run time.
    Start {
        /// Common start on the run clock.
        at: Nanos,
    },
    /// The holder may write now.
    Write,
    /// Stop every slot, send stats, exit.
    Stop,
    /// Answer with [`FromWorker::Probe`] at once: the coordinator's heartbeat (a worker that
    /// dialled in stops when it hears nothing for a while) and its clock probe
    /// ([`crate::clock`]).
    Probe {
        /// Echoed back.
        seq: u64,
    },
}

/// A message from a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWorker {
    /// Every client is connected.
    Ready {
        /// The worker's pid (as its own namespace sees it; informative).
        pid: u32,
    },
    /// A chunk of ops.
    Ops(Vec<Op>),
    /// The holder was granted a lock and waits for [`ToWorker::Write`].
    Granted(Granted),
    /// Final per-slot stats.
    Stats(Vec<StatsWire>),
    /// The worker could not run (e.g. a server unreachable).
    Error(String),
    /// The answer to [`ToWorker::Probe`]: the worker's run clock when it read the probe.
    Probe {
        /// The probe's `seq`.
        seq: u64,
        /// The worker's run clock.
        at: Nanos,
    },
    /// The backend broke (an adapter broke its protocol): what [`Backend::broken`]
    /// says, sent once, as soon as the worker sees it. The coordinator stops the run and
    /// reports it as the backend's error: a history through a broken adapter has no verdict.
    Broken(String),
}

/// How often a worker looks at [`Backend::broken`]: a broken adapter is reported within this
/// of its break (the protocol promises the run's error within 5 s).
const BROKEN_POLL: Duration = Duration::from_millis(100);

/// [`WorkerStats`] as it crosses the process boundary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatsWire {
    slot: u32,
    acquisitions: u64,
    acquisitions_total: u64,
    acquire_latency: String,
    acquire_service: String,
    requests_sent: Option<u64>,
    errors: Vec<(OpF, OpType, ErrorKind, u64)>,
    clients_replaced: u32,
}

fn histogram_hex(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("in-memory histogram serialization");
    crate::hex::encode(&bytes)
}

fn histogram_from_hex(hex: &str) -> Result<Histogram<u64>, String> {
    let bytes = crate::hex::decode(hex).map_err(|e| format!("histogram: {e}"))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram: {e:?}"))?;
    // Re-home into the standard bounds so merging never fails.
    let mut out = latency_histogram();
    out.add(&h)
        .map_err(|e| format!("histogram bounds: {e:?}"))?;
    Ok(out)
}

impl From<&WorkerStats> for StatsWire {
    fn from(w: &WorkerStats) -> StatsWire {
        StatsWire {
            slot: w.slot,
            acquisitions: w.acquisitions,
            acquisitions_total: w.acquisitions_total,
            acquire_latency: histogram_hex(&w.acquire_latency),
            acquire_service: histogram_hex(&w.acquire_service),
            requests_sent: w.requests_sent,
            errors: w
                .errors
                .iter()
                .map(|(&(f, t, e), &n)| (f, t, e, n))
                .collect(),
            clients_replaced: w.clients_replaced,
        }
    }
}

impl TryFrom<StatsWire> for WorkerStats {
    type Error = String;
    fn try_from(w: StatsWire) -> Result<WorkerStats, String> {
        Ok(WorkerStats {
            slot: w.slot,
            acquisitions: w.acquisitions,
            acquisitions_total: w.acquisitions_total,
            acquire_latency: histogram_from_hex(&w.acquire_latency)?,
            acquire_service: histogram_from_hex(&w.acquire_service)?,
            requests_sent: w.requests_sent,
            errors: w
                .errors
                .into_iter()
                .map(|(f, t, e, n)| ((f, t, e), n))
                .collect(),
            clients_replaced: w.clients_replaced,
        })
    }
}

pub(crate) async fn send_line(
    out: &mut (impl AsyncWrite + Unpin),
    msg: &impl Serialize,
) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await
}

/// Reads the job (the first line of the worker's stdin).
pub async fn read_job(input: &mut (impl AsyncBufRead + Unpin)) -> io::Result<Job> {
    let mut line = String::new();
    if input.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "no job: the coordinator closed this worker's input before sending one (it \
             stopped, or gave up on this worker)",
        ));
    }
    match serde_json::from_str::<ToWorker>(&line) {
        Ok(ToWorker::Job(job)) => Ok(*job),
        Ok(other) => Err(io::Error::other(format!("expected a job, got {other:?}"))),
        Err(e) => Err(io::Error::other(format!("bad job line: {e}"))),
    }
}

/// How a worker serves its job besides the job itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serving {
    /// Stop when nothing comes from the coordinator for this long (see [`serve`]).
    pub idle: Option<Duration>,
    /// Tests only: a deliberate clock error on every shipped op and probe answer.
    pub skew: Option<crate::clock::TestSkew>,
}

/// The worker side: runs `job`'s slots against `backend`, reading commands from `input` and
/// writing messages to `output`, until the run ends, the coordinator says stop, or `input`
/// closes (the coordinator is gone). With `idle`, also when nothing at all arrives for that
/// long (the coordinator probes every second, so silence means it hung or the network between
/// us is gone: a worker that dialled in over TCP may never see the connection close).
pub async fn serve<B: Backend>(
    backend: B,
    job: Job,
    input: impl AsyncBufRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    serving: Serving,
) -> io::Result<()> {
    let Serving { idle, skew } = serving;
    let clock = RunClock::from_monotonic_origin(job.clock_origin);
    let stamp = move |t: Nanos| skew.map_or(t, |s| s.apply(t));
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<FromWorker>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(msg) = out_rx.recv().await {
            if send_line(&mut output, &msg).await.is_err() {
                break;
            }
        }
    });
    let (history_tx, mut history_rx) = mpsc::unbounded_channel::<Vec<Op>>();
    let forward_ops = {
        let out = out_tx.clone();
        tokio::spawn(async move {
            while let Some(mut chunk) = history_rx.recv().await {
                if skew.is_some() {
                    for op in &mut chunk {
                        op.time = stamp(op.time);
                    }
                }
                let _ = out.send(FromWorker::Ops(chunk));
            }
        })
    };
    let control = RunControl::new(job.scenario.workload.clients);
    let (start_tx, start_rx) = oneshot::channel();
    let (connected_tx, connected_rx) = oneshot::channel();
    let (go_tx, go_rx) = mpsc::unbounded_channel();
    let holder = job.holder.then(|| {
        let (granted_tx, mut granted_rx) = mpsc::unbounded_channel();
        let out = out_tx.clone();
        tokio::spawn(async move {
            while let Some(g) = granted_rx.recv().await {
                let _ = out.send(FromWorker::Granted(g));
            }
        });
        HolderHooks {
            granted: granted_tx,
            go: go_rx,
        }
    });
    let commands = {
        let stop = control.stop.clone();
        let out = out_tx.clone();
        tokio::spawn(async move {
            let mut lines = input.lines();
            let mut start_tx = Some(start_tx);
            while let Some(line) = next_command(&mut lines, idle).await {
                match serde_json::from_str::<ToWorker>(&line) {
                    Ok(ToWorker::Probe { seq }) => {
                        let _ = out.send(FromWorker::Probe {
                            seq,
                            at: stamp(clock.now()),
                        });
                    }
                    Ok(ToWorker::Start { at }) => {
                        if let Some(tx) = start_tx.take() {
                            let _ = tx.send(at);
                        }
                    }
                    Ok(ToWorker::Write) => {
                        let _ = go_tx.send(());
                    }
                    Ok(ToWorker::Stop) => {
                        stop.send_replace(true);
                    }
                    Ok(ToWorker::Job(_)) | Err(_) => {
                        tracing::warn!(line, "worker: unexpected command");
                    }
                }
            }
            // Input closed or silent: the coordinator is gone or done with us.
            stop.send_replace(true);
        })
    };
    {
        let out = out_tx.clone();
        tokio::spawn(async move {
            if connected_rx.await.is_ok() {
                let _ = out.send(FromWorker::Ready {
                    pid: std::process::id(),
                });
            }
        });
    }
    let keys = job.scenario.workload.keys;
    let run = ContentionRun {
        workload: job.scenario.workload.clone(),
        seed: job.scenario.seed,
        warmup: job.scenario.warmup,
        duration: job.duration,
        clock,
        // Unused: a worker writes through the service.
        resource: Arc::new(FencedResource::new(job.scenario.resource, keys)),
        history: history_tx,
    };
    let options = SlotOptions {
        slots: job.slots.clone(),
        remote_resource: Some(job.resource),
        start: Some(start_rx),
        holder,
        connected: Some(connected_tx),
        count_elsewhere: job.count_elsewhere,
    };
    let backend = Arc::new(backend);
    let watch_broken = {
        let (backend, out) = (backend.clone(), out_tx.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(BROKEN_POLL).await;
                if let Some(why) = backend.broken() {
                    let _ = out.send(FromWorker::Broken(why));
                    return;
                }
            }
        })
    };
    let result = run_slots(backend.clone(), run, control, options).await;
    watch_broken.abort();
    if let (Err(_), Some(why)) = (watch_broken.await, backend.broken()) {
        // The watcher was stopped before it saw the break (the last moments of the run).
        let _ = out_tx.send(FromWorker::Broken(why));
    }
    let _ = forward_ops.await;
    match result {
        Ok(output) => {
            let stats = output.workers.iter().map(StatsWire::from).collect();
            let _ = out_tx.send(FromWorker::Stats(stats));
        }
        Err(e) => {
            let _ = out_tx.send(FromWorker::Error(e.to_string()));
        }
    }
    drop(out_tx);
    commands.abort();
    let _ = writer.await;
    Ok(())
}

/// The next command line, or `None` when `lines` ends, fails, or (with `idle`) stays silent
/// for `idle` and then one more second. The extra second is for a worker that a fault stopped
/// (SIGSTOP) for longer than `idle`: on SIGCONT its timer may fire before the runtime has seen
/// the probes that queued up meanwhile; they arrive within that second, a gone coordinator's
/// do not. Reading a line is cancel-safe, so a timeout loses nothing.
async fn next_command(
    lines: &mut tokio::io::Lines<impl AsyncBufRead + Unpin>,
    idle: Option<Duration>,
) -> Option<String> {
    let Some(idle) = idle else {
        return lines.next_line().await.ok().flatten();
    };
    for wait in [idle, Duration::from_secs(1)] {
        if let Ok(line) = tokio::time::timeout(wait, lines.next_line()).await {
            return line.ok().flatten();
        }
    }
    tracing::warn!(
        "worker: nothing from the coordinator for {:?}; it is gone or cut off: stopping",
        idle + Duration::from_secs(1)
    );
    None
}

/// The coordinator's handle on one worker process.
#[derive(Debug)]
pub struct WorkerProcess {
    /// A name for results and fault targets (`client1`, ... for slots 0, ...).
    pub name: String,
    /// The slots it runs.
    pub slots: Vec<u32>,
    handle: WorkerHandle,
    child: Child,
    link: Link,
}

/// A cheap, cloneable handle to signal a worker or send it commands (for the fencing
/// controller and the client nemesis, while the coordinator keeps the [`WorkerProcess`]).
#[derive(Debug, Clone)]
pub struct WorkerHandle {
    /// The worker's name (`client1`, ... for slots 0, ...).
    pub name: String,
    /// The slots it runs.
    pub slots: Vec<u32>,
    /// Its pid in the coordinator's pid namespace.
    pub pid: nix::unistd::Pid,
    /// The container it runs in (compose mode's client containers), for notes.
    pub container: Option<String>,
    /// Signals go through `docker kill --signal` to [`Self::container`] instead of to `pid`
    /// (this process cannot signal the container's process itself: no host root, or another
    /// pid namespace; see `lockbench_core::signal`).
    pub via_docker: bool,
    commands: mpsc::UnboundedSender<ToWorker>,
}

impl WorkerHandle {
    /// A handle on the worker `name` (running `slots`) whose process is `pid` (in `container`,
    /// signalled through Docker when `via_docker`), commanded through `commands`.
    pub(crate) fn new(
        name: String,
        slots: Vec<u32>,
        (pid, container, via_docker): (nix::unistd::Pid, Option<String>, bool),
        commands: mpsc::UnboundedSender<ToWorker>,
    ) -> WorkerHandle {
        WorkerHandle {
            name,
            slots,
            pid,
            container,
            via_docker,
            commands,
        }
    }

    /// Sends a command (queued; written to the worker's stdin in order).
    pub fn send(&self, msg: ToWorker) {
        let _ = self.commands.send(msg);
    }

    /// Sends a signal (SIGSTOP, SIGCONT, SIGKILL): to the worker's whole process group (it
    /// leads one, see `prepare`: its adapter processes stop and die with it), or to the
    /// container's process for a worker in a container.
    pub fn signal(&self, sig: nix::sys::signal::Signal) -> nix::Result<()> {
        match (self.container.as_deref(), self.via_docker) {
            (None, _) => nix::sys::signal::killpg(self.pid, sig),
            (Some(c), true) => lockbench_core::signal::send(self.pid, Some(c), sig),
            (Some(_), false) => nix::sys::signal::kill(self.pid, sig),
        }
    }

    /// `pid 123`, or `pid 123 (container lockbench-client1)`, for notes (and how it is
    /// signalled when that is through Docker).
    pub fn process(&self) -> String {
        match &self.container {
            Some(c) if self.via_docker => {
                format!(
                    "pid {} (container {c}, signalled through docker kill)",
                    self.pid
                )
            }
            Some(c) => format!("pid {} (container {c})", self.pid),
            None => format!("pid {}", self.pid),
        }
    }
}

/// Where a worker's messages go in the coordinator.
#[derive(Debug, Clone)]
pub struct WorkerSinks {
    /// Op chunks (the history writer).
    pub history: mpsc::UnboundedSender<Vec<Op>>,
    /// The holder's grants.
    pub granted: mpsc::UnboundedSender<Granted>,
    /// Progress counters (acquisitions per slot, for the progress bar).
    pub control: RunControl,
    /// Per slot: does it hold a lock right now (as far as its shipped ops tell; they lag by up
    /// to a quarter second). The client nemesis resolves `holder` with it.
    pub holding: Arc<[std::sync::atomic::AtomicBool]>,
    /// The first [`FromWorker::Broken`] any worker sent: set, the run is stopped
    /// ([`RunControl::stop`]) and ends as an error saying this.
    pub broken: Arc<std::sync::Mutex<Option<String>>>,
}

/// Makes a prepared command a worker: piped stdin/stdout, stderr to the run's log file
/// ([`worker_log`](crate::worker_log); the coordinator's stderr when there is none),
/// `PR_SET_PDEATHSIG = SIGKILL` so it dies with the coordinator however the coordinator dies,
/// and a process group of its own, so a fault's signal reaches whatever the worker runs its
/// clients in (an adapter's library process) with it.
pub(crate) fn prepare(mut cmd: std::process::Command) -> tokio::process::Command {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(crate::worker_log::stderr())
        .process_group(0);
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(io::Error::from)?;
            // The coordinator died between fork and prctl: do not outlive it.
            if nix::unistd::getppid() != parent {
                nix::libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

/// Spawns `cmd` (a `lockbench worker --coordinator` command line) as a worker that dials in:
/// no pipes (it talks over TCP), stderr as a worker process's, and like one it dies with the
/// coordinator and leads its own process group (a fault's signal reaches all of it).
pub fn spawn_dialling(cmd: std::process::Command) -> io::Result<Child> {
    let mut cmd = prepare(cmd);
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    cmd.spawn()
}

impl WorkerProcess {
    /// Spawns `cmd` (the `lockbench worker` command line, possibly wrapped to enter a client
    /// host's namespace), sends it `job`, and starts reading its messages into `sinks`.
    pub async fn spawn(
        name: String,
        cmd: std::process::Command,
        job: &Job,
        sinks: WorkerSinks,
    ) -> io::Result<WorkerProcess> {
        let mut child = prepare(cmd).spawn()?;
        let pid = nix::unistd::Pid::from_raw(
            child
                .id()
                .ok_or_else(|| io::Error::other("worker exited at once"))? as i32,
        );
        let stdin: ChildStdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let link = Link::start(
            BufReader::new(stdout),
            stdin,
            job,
            sinks,
            WorkerClock::Shared,
        )
        .await?;
        Ok(WorkerProcess {
            handle: WorkerHandle {
                name: name.clone(),
                slots: job.slots.clone(),
                pid,
                container: None,
                via_docker: false,
                commands: link.commands.clone(),
            },
            name,
            slots: job.slots.clone(),
            child,
            link,
        })
    }

    /// Signals go to `pid` from now on: the worker itself when the spawned command is not
    /// (`docker run`, whose container's process the worker is).
    /// `container` is where it runs, for notes; `via_docker`: signals go to it through Docker.
    pub fn set_pid(&mut self, pid: nix::unistd::Pid, container: Option<String>, via_docker: bool) {
        self.handle.pid = pid;
        self.handle.container = container;
        self.handle.via_docker = via_docker;
    }

    /// A handle for signals and commands.
    pub fn handle(&self) -> WorkerHandle {
        self.handle.clone()
    }

    /// Waits until every client of the worker is connected.
    pub async fn ready(&mut self) -> Result<(), String> {
        self.link.ready(&self.name).await
    }

    /// Sends a command.
    pub fn send(&self, msg: ToWorker) {
        self.handle.send(msg);
    }

    /// Sends a signal (SIGSTOP, SIGCONT, SIGKILL).
    pub fn signal(&self, sig: nix::sys::signal::Signal) -> nix::Result<()> {
        self.handle.signal(sig)
    }

    /// Tells the worker to stop, waits up to `budget` for its stats, and makes sure the process
    /// is gone (SIGCONT first, in case a fault left it stopped; SIGKILL if it overstays).
    pub async fn finish(mut self, budget: Duration) -> Result<Vec<WorkerStats>, String> {
        let _ = self.signal(nix::sys::signal::Signal::SIGCONT);
        let stats = self.link.finish(&self.name, budget).await;
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
        stats
    }

    /// The clock probes answered so far ([`crate::clock`]).
    pub fn clock_samples(&self) -> Vec<crate::clock::ProbeSample> {
        self.link.samples()
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // kill_on_drop covers the child; SIGCONT is harmless if it was not stopped.
        let _ = self.signal(nix::sys::signal::Signal::SIGCONT);
        let _ = self.child.start_kill();
    }
}

/// Merges worker stats and in-process stats into one [`RunOutput`], slots in order.
pub fn merge_outputs(mut parts: Vec<WorkerStats>, window: &RunOutput) -> RunOutput {
    parts.sort_by_key(|w| w.slot);
    RunOutput {
        workers: parts,
        measure_start: window.measure_start,
        measure_end: window.measure_end,
        interrupted: window.interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_survive_the_wire_with_their_histograms() {
        let mut w = WorkerStats::new(3);
        for v in [10, 200, 3000, 40_000] {
            w.acquire_latency.record(v).unwrap();
        }
        w.errors
            .insert((OpF::Acquire, OpType::Info, ErrorKind::Timeout), 2);
        let json = serde_json::to_string(&StatsWire::from(&w)).unwrap();
        let back =
            WorkerStats::try_from(serde_json::from_str::<StatsWire>(&json).unwrap()).unwrap();
        assert_eq!(back.slot, 3);
        assert_eq!(back.acquire_latency.len(), 4);
        assert_eq!(back.acquire_latency.max(), w.acquire_latency.max());
        assert_eq!(back.errors, w.errors);
    }

    /// Histograms are merged, never averaged: three workers' latencies, each
    /// sent over the wire as a V2-deflate histogram and merged by the coordinator, give exactly
    /// the percentiles of one histogram of all their values, where averaging the workers' own
    /// percentiles would not.
    #[test]
    fn merged_percentiles_are_the_percentiles_of_the_union() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(24);
        let mut union = latency_histogram();
        let mut parts = Vec::new();
        // Three very different workers: a fast one, a slow one, a bimodal one.
        for (slot, (lo, hi, n)) in [
            (1_000u64, 50_000u64, 20_000),
            (200_000, 5_000_000, 3_000),
            (1_000, 90_000_000, 500),
        ]
        .into_iter()
        .enumerate()
        {
            let mut w = WorkerStats::new(slot as u32);
            for _ in 0..n {
                let v = rng.random_range(lo..hi);
                w.acquire_latency.record(v).unwrap();
                union.record(v).unwrap();
            }
            let wire = serde_json::to_string(&StatsWire::from(&w)).unwrap();
            parts.push(
                WorkerStats::try_from(serde_json::from_str::<StatsWire>(&wire).unwrap()).unwrap(),
            );
        }
        let window = RunOutput {
            workers: Vec::new(),
            measure_start: Nanos(0),
            measure_end: Nanos(1),
            interrupted: false,
        };
        let merged = merge_outputs(parts, &window);
        let all = merged.acquire_latency();
        assert_eq!(all.len(), union.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(all.value_at_quantile(q), union.value_at_quantile(q), "q{q}");
        }
        let averaged: u64 = merged
            .workers
            .iter()
            .map(|w| w.acquire_latency.value_at_quantile(0.99))
            .sum::<u64>()
            / 3;
        assert_ne!(
            averaged,
            union.value_at_quantile(0.99),
            "the test cannot tell"
        );
    }

    /// Regression: `lockbench run chaos-quick --seed 3` sent its workers a job line with
    /// `jitter` twice (the link delay's and the schedule's), and every worker refused it. The
    /// real job line (`send_line` / `read_job`) must carry every built-in scenario, with an
    /// override applied, unchanged.
    #[tokio::test]
    async fn every_builtin_scenario_crosses_the_job_line_unchanged() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.display().to_string();
            let scenario = Scenario::load(&name, &text, &["seed=3".into()]).unwrap();
            let job = Job {
                backend: BackendKind::of("etcd-lease"),
                endpoints: Endpoints::default(),
                scenario: scenario.clone(),
                duration: scenario.duration + scenario.recovery,
                slots: vec![0],
                holder: true,
                clock_origin: 42,
                resource: "10.77.0.1:4000".parse().unwrap(),
                count_elsewhere: false,
                sent_at: None,
            };
            let mut line = Vec::new();
            send_line(&mut line, &ToWorker::Job(Box::new(job)))
                .await
                .unwrap();
            let back = read_job(&mut line.as_slice())
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(back.scenario, scenario, "{name}");
            seen += 1;
        }
        assert!(seen >= 14, "only {seen} scenarios in {dir}");
    }

    #[tokio::test]
    async fn an_input_closed_before_any_job_says_so() {
        let e = read_job(&mut &b""[..]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(
            e.to_string().starts_with("no job: the coordinator closed"),
            "{e}"
        );
        let e = read_job(&mut &b"{\n"[..]).await.unwrap_err();
        assert!(e.to_string().starts_with("bad job line"), "{e}");
    }
}
