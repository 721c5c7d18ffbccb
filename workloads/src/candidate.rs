//! One leader-election candidate in its own worker process (`lockbench worker`), for the
//! failover workload, and the coordinator's handle on it.
//!
//! Why a process per candidate: the workload kills (SIGKILL) and pauses (SIGSTOP) the leader,
//! and only a process takes its session heartbeats, lease keep-alives and renewals down with
//! it. It reuses the worker machinery of [`crate::worker`]: the same `lockbench worker`
//! command, spawned the same way (`PR_SET_PDEATHSIG`, on the run's client host), the same
//! run clock origin, and the same [`FromWorker`] messages back; only the job and the commands
//! differ.
//!
//! ```text
//! coordinator -> worker: {"candidate":{..}}       recipe, election name, endpoints, id, clock
//! worker -> coordinator: {"ready":{"pid":..}}     campaign and observer connections open
//!                        {"ops":[..]} ...         every election op at once (one per message)
//! coordinator -> worker: "resign" | "stop"
//! ```
//!
//! The candidate holds two connections: one campaigns and leads, the other only observes, so
//! observing never waits behind a blocking campaign and survives the campaign connection being
//! replaced. What it records (see [`lockbench_core::election`] for the op kinds):
//! `campaign` invoke/ok, `leader-lost` when a leader learns its term ended, `resign`, and an
//! `observe` each time the leader it sees changes, with the leader's candidate id in the op's
//! `key` and its epoch in `token`. After leadership is lost, or a campaign fails, the campaign
//! connection is closed and a fresh one opened (a ZooKeeper session that expired or an etcd
//! lease that died cannot campaign again). After a resign the candidate steps aside: it
//! campaigns again only once it has seen someone else lead (or after the round timeout).

use crate::worker::{FromWorker, prepare};
use lockbench_core::{
    Candidate, ClientId, ElectionKind, Elector, Endpoints, ErrorKind, KeyId, Leader, Op, OpF,
    OpType, Outcome, RunClock, Scenario,
};
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, watch};

/// How long closing a candidate connection may take before it is dropped.
const CLOSE_BUDGET: Duration = Duration::from_secs(3);
/// Pause before retrying after an error (a reconnect, an observe that failed).
const RETRY: Duration = Duration::from_millis(100);

/// Everything a candidate process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CandidateJob {
    /// Which recipe.
    pub election: ElectionKind,
    /// The election's name: one per run, so nothing an earlier run left takes part.
    pub name: String,
    /// Where the servers are, as the worker's host sees them.
    pub endpoints: Endpoints,
    /// The scenario (knobs).
    pub scenario: Scenario,
    /// This candidate's id.
    pub candidate: ClientId,
    /// The run clock's origin, raw `CLOCK_MONOTONIC` nanoseconds.
    pub clock_origin: u64,
}

/// The first line a candidate worker reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateStart {
    /// The job.
    Candidate(Box<CandidateJob>),
}

/// A command to a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToCandidate {
    /// Give leadership up (ignored by a candidate that does not lead).
    Resign,
    /// Close everything and exit.
    Stop,
}

/// Parses `line` as a candidate job (the first line of a worker's stdin), or `None` when it is
/// some other worker's job.
pub fn parse_job(line: &str) -> Option<CandidateJob> {
    match serde_json::from_str::<CandidateStart>(line) {
        Ok(CandidateStart::Candidate(job)) => Some(*job),
        Err(_) => None,
    }
}

async fn send_line(out: &mut (impl AsyncWrite + Unpin), msg: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await
}

/// Records election ops: each one is shipped to the coordinator at once (a handful per
/// second), so it knows who leads while the run goes.
#[derive(Clone)]
struct Recorder {
    clock: RunClock,
    id: ClientId,
    out: mpsc::UnboundedSender<FromWorker>,
}

impl Recorder {
    fn record(&self, f: OpF, ty: OpType, about: Option<Leader>, error: Option<ErrorKind>) {
        let op = Op::complete(
            self.clock.now(),
            self.id,
            f,
            KeyId(about.map_or(0, |l| l.candidate.0)),
            ty,
            about.map(|l| l.epoch),
            error,
        );
        let _ = self.out.send(FromWorker::Ops(vec![op]));
    }
}

/// Connects a candidate, retrying until it works or `stop` is set.
async fn connect_until<E: Elector>(
    elector: &E,
    id: ClientId,
    stop: &mut watch::Receiver<bool>,
) -> Option<E::Candidate> {
    loop {
        if *stop.borrow() {
            return None;
        }
        match elector.connect(id).await {
            Ok(c) => return Some(c),
            Err(e) => {
                // Expected while a server restarts (server-kill): not worth a warning each try.
                tracing::debug!(candidate = %id, error = %e, "candidate: cannot connect; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(RETRY) => {}
                    _ = stop.wait_for(|s| *s) => return None,
                }
            }
        }
    }
}

async fn close_bounded<C: Candidate>(c: C) {
    let _ = tokio::time::timeout(CLOSE_BUDGET, c.close()).await;
}

/// The worker side: runs one candidate of `job` against `elector`, reading commands from
/// `input` and writing messages to `output`, until told to stop or stdin closes.
pub async fn serve<E: Elector>(
    elector: E,
    job: CandidateJob,
    input: impl AsyncBufRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> io::Result<()> {
    let clock = RunClock::from_monotonic_origin(job.clock_origin);
    let id = job.candidate;
    let step_aside = job.scenario.failover.round_timeout;
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<FromWorker>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(msg) = out_rx.recv().await {
            if send_line(&mut output, &msg).await.is_err() {
                break;
            }
        }
    });
    let (stop_tx, mut stop) = watch::channel(false);
    let (resign_tx, mut resign_rx) = mpsc::unbounded_channel::<()>();
    let commands = tokio::spawn(async move {
        let mut lines = input.lines();
        while let Ok(Some(line)) = lines.next_line().await {
            match serde_json::from_str::<ToCandidate>(&line) {
                Ok(ToCandidate::Resign) => {
                    let _ = resign_tx.send(());
                }
                Ok(ToCandidate::Stop) => break,
                Err(_) => tracing::warn!(line, "candidate: unexpected command"),
            }
        }
        // "stop", or stdin closed: the coordinator is done with us or gone.
        stop_tx.send_replace(true);
    });

    let (campaigner, observer) = match (elector.connect(id).await, elector.connect(id).await) {
        (Ok(c), Ok(o)) => (c, o),
        (Err(e), _) | (_, Err(e)) => {
            let _ = out_tx.send(FromWorker::Error(format!("candidate {id}: {e}")));
            drop(out_tx);
            commands.abort();
            let _ = writer.await;
            return Ok(());
        }
    };
    let _ = out_tx.send(FromWorker::Ready {
        pid: std::process::id(),
    });
    let rec = Recorder {
        clock,
        id,
        out: out_tx.clone(),
    };
    drop(out_tx);

    // The observer reports every change of the leader it sees; the campaigner campaigns,
    // leads, resigns when told. Both borrow the elector, so they run side by side in this task.
    let (seen_tx, seen) = watch::channel::<Option<Leader>>(None);
    let observing = observe_loop(&elector, observer, &rec, seen_tx, stop.clone());
    let campaigning = campaign_loop(
        &elector,
        campaigner,
        &rec,
        &mut resign_rx,
        seen,
        step_aside,
        stop.clone(),
    );
    tokio::join!(observing, campaigning);
    let _ = stop.wait_for(|s| *s).await;
    drop(rec);
    commands.abort();
    let _ = writer.await;
    Ok(())
}

/// Observes until stopped; reconnects when its session ends.
async fn observe_loop<E: Elector>(
    elector: &E,
    observer: E::Candidate,
    rec: &Recorder,
    seen: watch::Sender<Option<Leader>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut observer = Some(observer);
    let mut known = None;
    while let Some(o) = observer.as_ref() {
        let r = tokio::select! {
            r = o.observe(known) => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        match r {
            Outcome::Ok(leader) => {
                rec.record(OpF::Observe, OpType::Ok, leader, None);
                known = leader;
                seen.send_replace(leader);
            }
            Outcome::Fail(ErrorKind::SessionExpired) => {
                if let Some(old) = observer.take() {
                    close_bounded(old).await;
                }
                observer = connect_until(elector, rec.id, &mut stop).await;
            }
            Outcome::Fail(_) | Outcome::Info(_) => {
                tokio::select! {
                    _ = tokio::time::sleep(RETRY) => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
            }
        }
    }
    if let Some(o) = observer {
        close_bounded(o).await;
    }
}

/// How a term ended.
enum TermEnd {
    Lost(ErrorKind),
    Resign,
    Stop,
}

/// Campaigns, leads, and campaigns again, until stopped.
async fn campaign_loop<E: Elector>(
    elector: &E,
    candidate: E::Candidate,
    rec: &Recorder,
    resign: &mut mpsc::UnboundedReceiver<()>,
    mut seen: watch::Receiver<Option<Leader>>,
    step_aside: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut current = Some(candidate);
    while let Some(c) = current.as_ref() {
        // A resign meant for an earlier term is stale.
        while resign.try_recv().is_ok() {}
        rec.record(OpF::Campaign, OpType::Invoke, None, None);
        let r = tokio::select! {
            r = c.campaign() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        let leadership = match r {
            Outcome::Ok(l) => l,
            Outcome::Fail(e) | Outcome::Info(e) => {
                let ty = if matches!(r, Outcome::Fail(_)) {
                    OpType::Fail
                } else {
                    OpType::Info
                };
                rec.record(OpF::Campaign, ty, None, Some(e));
                if let Some(old) = current.take() {
                    close_bounded(old).await;
                }
                tokio::select! {
                    _ = tokio::time::sleep(RETRY) => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
                current = connect_until(elector, rec.id, &mut stop).await;
                continue;
            }
        };
        rec.record(OpF::Campaign, OpType::Ok, Some(leadership), None);
        let end = tokio::select! {
            lost = c.hold(&leadership) => TermEnd::Lost(lost),
            Some(()) = resign.recv() => TermEnd::Resign,
            _ = stop.wait_for(|s| *s) => TermEnd::Stop,
        };
        match end {
            TermEnd::Lost(why) => {
                rec.record(OpF::LeaderLost, OpType::Ok, Some(leadership), Some(why));
                if let Some(old) = current.take() {
                    close_bounded(old).await;
                }
                current = connect_until(elector, rec.id, &mut stop).await;
            }
            TermEnd::Resign => {
                rec.record(OpF::Resign, OpType::Invoke, Some(leadership), None);
                let r = c.resign(&leadership).await;
                rec.record(OpF::Resign, r.op_type(), Some(leadership), r.error());
                // Step aside until someone else leads, so the hand-over is to another candidate.
                let other = seen.wait_for(|l| l.is_some_and(|l| l.candidate != rec.id));
                tokio::select! {
                    _ = tokio::time::timeout(step_aside, other) => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
            }
            TermEnd::Stop => {
                // The run is over: give leadership up, so the history shows where the term
                // ended.
                rec.record(OpF::Resign, OpType::Invoke, Some(leadership), None);
                let r = c.resign(&leadership).await;
                rec.record(OpF::Resign, r.op_type(), Some(leadership), r.error());
                break;
            }
        }
    }
    if let Some(c) = current {
        close_bounded(c).await;
    }
}

/// The coordinator's handle on one candidate process.
#[derive(Debug)]
pub struct CandidateProcess {
    /// The candidate's id.
    pub candidate: ClientId,
    /// The client host / worker name it runs as (`client1`, ...).
    pub host: String,
    /// Its pid in the coordinator's pid namespace.
    pub pid: nix::unistd::Pid,
    /// The container to signal through Docker instead of `pid` (see
    /// `lockbench_core::signal`); `None`: signals go to `pid`.
    pub via_docker: Option<String>,
    child: Child,
    commands: mpsc::UnboundedSender<ToCandidate>,
}

/// What a candidate process reports to the coordinator.
#[derive(Debug)]
pub enum CandidateEvent {
    /// Its connections are open.
    Ready(ClientId),
    /// An election op it recorded.
    Op(Op),
    /// It could not run.
    Error(ClientId, String),
    /// Its output ended (it exited, or was killed).
    Gone(ClientId),
}

impl CandidateProcess {
    /// Spawns `cmd` (the `lockbench worker` command line, possibly wrapped to enter a client
    /// host), sends it `job`, and forwards what it reports to `events`.
    pub async fn spawn(
        host: String,
        cmd: std::process::Command,
        job: &CandidateJob,
        events: mpsc::UnboundedSender<CandidateEvent>,
    ) -> io::Result<CandidateProcess> {
        let mut child = prepare(cmd).spawn()?;
        let pid = nix::unistd::Pid::from_raw(
            child
                .id()
                .ok_or_else(|| io::Error::other("candidate exited at once"))? as i32,
        );
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        send_line(
            &mut stdin,
            &CandidateStart::Candidate(Box::new(job.clone())),
        )
        .await?;
        let (commands, mut rx) = mpsc::unbounded_channel::<ToCandidate>();
        tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                if send_line(&mut stdin, &msg).await.is_err() {
                    break;
                }
            }
        });
        let id = job.candidate;
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let event = match serde_json::from_str::<FromWorker>(&line) {
                    Ok(FromWorker::Ready { .. }) => CandidateEvent::Ready(id),
                    Ok(FromWorker::Ops(ops)) => {
                        for op in ops {
                            let _ = events.send(CandidateEvent::Op(op));
                        }
                        continue;
                    }
                    Ok(FromWorker::Error(e)) => CandidateEvent::Error(id, e),
                    Ok(_) | Err(_) => continue,
                };
                let _ = events.send(event);
            }
            let _ = events.send(CandidateEvent::Gone(id));
        });
        Ok(CandidateProcess {
            candidate: id,
            host,
            pid,
            via_docker: None,
            child,
            commands,
        })
    }

    /// Sends a command.
    pub fn send(&self, msg: ToCandidate) {
        let _ = self.commands.send(msg);
    }

    /// Sends a signal (SIGSTOP, SIGCONT, SIGKILL).
    pub fn signal(&self, sig: nix::sys::signal::Signal) -> nix::Result<()> {
        lockbench_core::signal::send(self.pid, self.via_docker.as_deref(), sig)
    }

    /// Tells it to stop and waits (bounded) for it to exit; kills it if it overstays.
    pub async fn finish(mut self, budget: Duration) {
        let _ = self.signal(nix::sys::signal::Signal::SIGCONT);
        self.send(ToCandidate::Stop);
        if tokio::time::timeout(budget, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// Waits for a killed process to be reaped.
    pub async fn reap(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

impl Drop for CandidateProcess {
    fn drop(&mut self) {
        let _ = self.signal(nix::sys::signal::Signal::SIGCONT);
        let _ = self.child.start_kill();
    }
}
