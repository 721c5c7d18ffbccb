//! The failover workload's coordinator: candidate processes, leader removals round after
//! round, one history, one result per election recipe.
//!
//! Why this shape: the quantity measured is a *transition* (a leader removed, a new one
//! elected, everyone told), so the run is driven by the election's state rather than by a
//! clock. The coordinator follows that state from the candidates' own ops as they arrive
//! ([`Tracker`]): before each removal it waits until the election has *settled* (exactly one
//! live candidate leads and every live candidate observes it), waits `failover.interval`,
//! removes the leader, and waits until it has settled on another leader (or
//! `failover.round_timeout`). Only the candidates' ops and the removal events, all on the run
//! clock, enter the history; every figure comes from the checker
//! (`lockbench_analysis::failover`) reading that history, never from the coordinator's
//! receive times.
//!
//! Removals: `resign` (a command to the leader), `kill` (SIGKILL of its process; a fresh
//! candidate process takes its client host once the round settled, so every round has N
//! candidates), `pause` (SIGSTOP for `failover.pause`, then SIGCONT), `server-kill` (the chaos
//! crate's [`ServerNemesis`](lockbench_chaos::ServerNemesis) kills the system's leader server;
//! restarted with its data directory once the round settled; managed cluster only),
//! `partition` (the same nemesis isolates the leader's client host from every other host for
//! `failover.pause`, then heals; netns topology only).
//! Candidates are worker processes on the run's client hosts ([`RunEnv::worker_command`]).

use crate::placement::{RunEnv, worker_name};
use anyhow::Context;
use lockbench_chaos::Nemesis;
use lockbench_core::election::FailoverKnobs;
use lockbench_core::{
    ClientId, ElectionKind, Elector, Endpoints, Fault, FaultEvent, FaultPhase, History, OpF,
    OpType, PartitionSpec, Removal, RunClock, Scenario, Targets,
};
use lockbench_report::model::FailoverResult;
use lockbench_report::{BackendResult, RunDir, build};
use lockbench_workloads::RunControl;
use lockbench_workloads::candidate::{
    self, CandidateEvent, CandidateJob, CandidateProcess, ToCandidate,
};
use nix::sys::signal::Signal;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How long candidates get to connect.
const READY_BUDGET: Duration = Duration::from_secs(30);
/// How long a candidate gets to exit after `stop`.
const FINISH_BUDGET: Duration = Duration::from_secs(5);

/// Binds `$e` to the elector of `$kind` and evaluates `$body`, generic over its type.
macro_rules! with_elector {
    ($kind:expr, $scenario:expr, $endpoints:expr, $name:expr, |$e:ident| $body:expr) => {{
        let scenario: &Scenario = $scenario;
        let endpoints: &Endpoints = $endpoints;
        let name: &str = $name;
        match $kind {
            ElectionKind::ZkElection => {
                let $e =
                    lockbench_zookeeper::ZkElection::new(endpoints, &scenario.zookeeper, name)?;
                $body
            }
            ElectionKind::EtcdElection => {
                let $e = lockbench_etcd::EtcdElection::new(endpoints, &scenario.etcd, name)?;
                $body
            }
            ElectionKind::EtcdLeaseElection => {
                let $e = lockbench_etcd::EtcdLeaseElection::new(endpoints, &scenario.etcd, name)?;
                $body
            }
            ElectionKind::RedisLeaseElection => {
                let $e = lockbench_redis::RedisLeaseElection::new(
                    endpoints,
                    &scenario.redis,
                    scenario.failover.poll,
                    name,
                )?;
                $body
            }
        }
    }};
}

/// The worker side: serves one candidate job on stdin/stdout.
pub async fn run_candidate(
    job: CandidateJob,
    stdin: tokio::io::BufReader<tokio::io::Stdin>,
) -> anyhow::Result<()> {
    let (scenario, endpoints, name) = (
        job.scenario.clone(),
        job.endpoints.clone(),
        job.name.clone(),
    );
    with_elector!(job.election, &scenario, &endpoints, &name, |e| {
        candidate::serve(e, job, stdin, tokio::io::stdout()).await?;
        Ok(())
    })
}

/// What the coordinator knows of the election, from the candidates' ops.
#[derive(Default)]
struct Tracker {
    /// Candidates that believe they lead, with their epoch.
    leading: BTreeMap<u32, u64>,
    /// Each candidate's latest observation: (leader candidate, epoch), or none.
    seen: BTreeMap<u32, Option<(u32, u64)>>,
    ready: BTreeSet<u32>,
    /// Candidates whose process ended (killed, or failed).
    gone: BTreeSet<u32>,
    errors: Vec<String>,
}

impl Tracker {
    fn apply(&mut self, ev: &CandidateEvent) {
        match ev {
            CandidateEvent::Ready(c) => {
                self.ready.insert(c.0);
            }
            CandidateEvent::Error(c, e) => {
                self.errors.push(format!("candidate {c}: {e}"));
                self.gone.insert(c.0);
            }
            CandidateEvent::Gone(c) => {
                self.gone.insert(c.0);
                self.leading.remove(&c.0);
            }
            CandidateEvent::Op(op) => {
                let c = op.client.0;
                match (op.f, op.ty) {
                    (OpF::Campaign, OpType::Ok) => {
                        self.leading.insert(c, op.token.map_or(0, |t| t.0));
                    }
                    (OpF::LeaderLost, _) | (OpF::Resign, OpType::Invoke) => {
                        self.leading.remove(&c);
                    }
                    (OpF::Observe, OpType::Ok) => {
                        let leader = op.token.map(|t| (op.key.0, t.0));
                        self.seen.insert(c, leader);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The leader when the election has settled among `live`: exactly one of them believes it
    /// leads and every one of them observes it.
    fn settled(&self, live: &BTreeSet<u32>) -> Option<(u32, u64)> {
        let mut leaders = self.leading.iter().filter(|(c, _)| live.contains(c));
        let (&c, &epoch) = leaders.next()?;
        if leaders.next().is_some() {
            return None;
        }
        live.iter()
            .all(|o| self.seen.get(o).copied().flatten() == Some((c, epoch)))
            .then_some((c, epoch))
    }
}

/// One run of the failover workload against one recipe.
struct Run<'a> {
    scenario: &'a Scenario,
    kind: ElectionKind,
    endpoints: &'a Endpoints,
    env: &'a RunEnv,
    run_dir: &'a RunDir,
    clock: RunClock,
    election_name: String,
    tracker: Tracker,
    events_tx: mpsc::UnboundedSender<CandidateEvent>,
    events_rx: mpsc::UnboundedReceiver<CandidateEvent>,
    history: mpsc::UnboundedSender<Vec<lockbench_core::Op>>,
    faults: Vec<FaultEvent>,
    /// Live candidate processes by slot.
    slots: BTreeMap<u32, CandidateProcess>,
    /// Processes killed, kept until reaped.
    dead: Vec<CandidateProcess>,
    /// Candidates stopped (paused) right now.
    paused: BTreeSet<u32>,
    next_id: u32,
    stop: watch::Receiver<bool>,
}

impl Run<'_> {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn live(&self) -> BTreeSet<u32> {
        self.slots
            .values()
            .map(|p| p.candidate.0)
            .filter(|c| !self.paused.contains(c) && !self.tracker.gone.contains(c))
            .collect()
    }

    fn record_fault(
        &mut self,
        fault: &str,
        phase: FaultPhase,
        targets: Vec<String>,
        note: String,
        applied: bool,
    ) {
        let e = FaultEvent {
            time: self.clock.now(),
            fault: fault.into(),
            phase,
            targets,
            note,
            applied,
        };
        self.log_fault(e);
    }

    fn log_fault(&mut self, e: FaultEvent) {
        if e.applied {
            eprintln!(
                "lockbench: {}: {} {:?} {} ({})",
                self.name(),
                e.fault,
                e.phase,
                e.targets.join(","),
                e.note
            );
        } else {
            eprintln!(
                "lockbench: {}: NOT APPLIED: {} {} ({})",
                self.name(),
                e.fault,
                e.targets.join(","),
                e.note
            );
        }
        if let Err(err) = self.run_dir.append_fault(self.name(), &e) {
            tracing::warn!(error = %err, "cannot record a fault event");
        }
        self.faults.push(e);
    }

    fn handle(&mut self, ev: CandidateEvent) {
        self.tracker.apply(&ev);
        if let CandidateEvent::Op(op) = ev {
            let _ = self.history.send(vec![op]);
        }
    }

    /// Processes candidate events until `done` holds, `budget` runs out or the run is
    /// stopped; returns whether `done` held.
    async fn wait_until(&mut self, budget: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = Instant::now() + budget;
        loop {
            if done(self) {
                return true;
            }
            if *self.stop.borrow() {
                return false;
            }
            let ev = tokio::select! {
                ev = self.events_rx.recv() => ev,
                _ = tokio::time::sleep_until(deadline.into()) => return done(self),
                _ = self.stop.changed() => continue,
            };
            match ev {
                Some(ev) => self.handle(ev),
                None => return done(self),
            }
        }
    }

    /// Starts a fresh candidate process on `slot`.
    async fn spawn(&mut self, slot: u32) -> anyhow::Result<()> {
        let id = ClientId(self.next_id);
        self.next_id += 1;
        let job = CandidateJob {
            election: self.kind,
            name: self.election_name.clone(),
            endpoints: self.endpoints.clone(),
            scenario: self.scenario.clone(),
            candidate: id,
            clock_origin: self.clock.monotonic_origin(),
        };
        let host = worker_name(slot);
        let mut cmd = self.env.worker_command(slot)?;
        if std::env::var_os("LOCKBENCH_LOG").is_none() {
            // The ZooKeeper client warns on every failed reconnect while a server is down
            // (server-kill); the removal events already say what happened.
            cmd.env("LOCKBENCH_LOG", "warn,zookeeper_client=error");
        }
        let p = CandidateProcess::spawn(host.clone(), cmd, &job, self.events_tx.clone())
            .await
            .with_context(|| format!("cannot start candidate {id} on {host}"))?;
        self.slots.insert(slot, p);
        let ok = self
            .wait_until(READY_BUDGET, |r| {
                r.tracker.ready.contains(&id.0) || r.tracker.gone.contains(&id.0)
            })
            .await;
        if !ok || !self.tracker.ready.contains(&id.0) {
            let why = self.tracker.errors.last().cloned().unwrap_or_else(|| {
                format!("candidate {id} did not connect within {READY_BUDGET:?}")
            });
            anyhow::bail!("{why}");
        }
        Ok(())
    }

    fn slot_of(&self, candidate: u32) -> Option<u32> {
        self.slots
            .iter()
            .find(|(_, p)| p.candidate.0 == candidate)
            .map(|(&s, _)| s)
    }

    /// Waits for a settled leader among the live candidates.
    async fn settle(&mut self) -> Option<(u32, u64)> {
        let budget = self.scenario.failover.round_timeout;
        self.wait_until(budget, |r| r.tracker.settled(&r.live()).is_some())
            .await;
        self.tracker.settled(&self.live())
    }

    /// Waits until the election settled on a leadership other than `old`.
    async fn settle_elsewhere(&mut self, old: (u32, u64)) {
        let budget = self.scenario.failover.round_timeout;
        self.wait_until(budget, |r| {
            r.tracker.settled(&r.live()).is_some_and(|l| l != old)
        })
        .await;
    }

    async fn round(
        &mut self,
        removal: Removal,
        server: &mut Option<lockbench_chaos::ServerNemesis>,
    ) -> anyhow::Result<()> {
        let Some((leader, epoch)) = self.settle().await else {
            if !*self.stop.borrow() {
                eprintln!(
                    "lockbench: {}: no settled leader within {:?}; skipping a {} round",
                    self.name(),
                    self.scenario.failover.round_timeout,
                    removal.name()
                );
            }
            return Ok(());
        };
        // Let followers' observations and the leader's renewals run for a while.
        let interval = self.scenario.failover.interval;
        self.wait_until(interval, |_| false).await;
        if *self.stop.borrow() {
            return Ok(());
        }
        let target = format!("c{leader}");
        let slot = self.slot_of(leader).context("the leader has no process")?;
        match removal {
            Removal::Resign => {
                self.slots[&slot].send(ToCandidate::Resign);
                self.record_fault(
                    "resign",
                    FaultPhase::Start,
                    vec![target],
                    format!("leader c{leader} (epoch {epoch}) told to resign"),
                    true,
                );
                self.settle_elsewhere((leader, epoch)).await;
            }
            Removal::Kill => {
                let p = self.slots.remove(&slot).expect("slot of the leader");
                let killed = p.signal(Signal::SIGKILL);
                self.record_fault(
                    "kill",
                    FaultPhase::Start,
                    vec![target],
                    match &killed {
                        Ok(()) => format!(
                            "SIGKILL pid {} ({}), leader c{leader} epoch {epoch}",
                            p.pid, p.host
                        ),
                        Err(e) => format!("SIGKILL failed: {e}"),
                    },
                    killed.is_ok(),
                );
                self.tracker.gone.insert(leader);
                self.dead.push(p);
                self.settle_elsewhere((leader, epoch)).await;
                // A fresh candidate takes the dead one's host.
                self.spawn(slot).await?;
            }
            Removal::Pause => {
                let pause = self.scenario.leader_pause(self.kind);
                let paused_at = Instant::now();
                let stopped = self.slots[&slot].signal(Signal::SIGSTOP);
                let pid = self.slots[&slot].pid;
                self.record_fault(
                    "pause",
                    FaultPhase::Start,
                    vec![target.clone()],
                    match &stopped {
                        Ok(()) => format!(
                            "SIGSTOP pid {pid}, leader c{leader} epoch {epoch}, for {}",
                            humantime::format_duration(pause)
                        ),
                        Err(e) => format!("SIGSTOP failed: {e}"),
                    },
                    stopped.is_ok(),
                );
                self.paused.insert(leader);
                self.settle_elsewhere((leader, epoch)).await;
                let left = pause.saturating_sub(paused_at.elapsed());
                self.wait_until(left, |_| false).await;
                let resumed = self.slots[&slot].signal(Signal::SIGCONT);
                self.paused.remove(&leader);
                self.record_fault(
                    "pause",
                    FaultPhase::Stop,
                    vec![target],
                    format!("SIGCONT pid {pid}"),
                    resumed.is_ok(),
                );
                // The resumed candidate learns it lost and observes the new leader.
                self.settle().await;
            }
            Removal::Partition => {
                let Some(nemesis) = server.as_mut() else {
                    self.record_fault(
                        "partition",
                        FaultPhase::Start,
                        vec![target],
                        "partitions need the managed cluster".into(),
                        false,
                    );
                    return Ok(());
                };
                let cut_for = self.scenario.leader_pause(self.kind);
                let cut_at = Instant::now();
                let host = worker_name(slot);
                let cut = Fault::Partition {
                    split: PartitionSpec::Isolate(Targets::Nodes(vec![host.clone()])),
                };
                let mut applied = false;
                for mut e in nemesis.apply(&cut, &self.clock).await {
                    // Name the candidate, as the checker reads it; the host stays in the note.
                    e.note = format!("leader c{leader} epoch {epoch} on {host}: {}", e.note);
                    e.targets = vec![target.clone()];
                    applied |= e.applied;
                    self.log_fault(e);
                }
                if !applied {
                    return Ok(());
                }
                self.paused.insert(leader);
                self.settle_elsewhere((leader, epoch)).await;
                let left = cut_for.saturating_sub(cut_at.elapsed());
                self.wait_until(left, |_| false).await;
                for mut e in nemesis.apply(&Fault::Heal, &self.clock).await {
                    e.targets = vec![target.clone()];
                    self.log_fault(e);
                }
                self.paused.remove(&leader);
                self.settle().await;
            }
            Removal::ServerKill => {
                let Some(nemesis) = server.as_mut() else {
                    self.record_fault(
                        "kill",
                        FaultPhase::Start,
                        vec!["leader-server".into()],
                        "server faults need the managed cluster".into(),
                        false,
                    );
                    return Ok(());
                };
                let fault = Fault::Kill {
                    targets: Targets::Leader,
                };
                for e in nemesis.apply(&fault, &self.clock).await {
                    self.log_fault(e);
                }
                // Give the election the time a dead leader would need to be replaced; a
                // leader that survives the server's death keeps leading.
                let expiry = self.scenario.election_expiry(self.kind);
                let budget =
                    (expiry * 2 + Duration::from_secs(1)).min(self.scenario.failover.round_timeout);
                self.wait_until(budget, |r| {
                    r.tracker
                        .settled(&r.live())
                        .is_some_and(|l| l != (leader, epoch))
                })
                .await;
                let start = Fault::Start {
                    targets: Targets::All,
                };
                for e in nemesis.apply(&start, &self.clock).await {
                    self.log_fault(e);
                }
                self.settle().await;
            }
        }
        Ok(())
    }
}

/// Runs one recipe for `lockbench run`: Ctrl-C (through `current`) stops it; an error becomes
/// an `error` result naming it.
pub async fn run_one(
    kind: ElectionKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    env: &RunEnv,
    current: &std::sync::Mutex<Option<RunControl>>,
) -> BackendResult {
    let control = RunControl::new(scenario.workload.clients);
    *current.lock().expect("control lock") = Some(control.clone());
    eprintln!(
        "lockbench: {kind}: {} candidates, removals {}, {} round(s) each",
        scenario.workload.clients,
        scenario
            .failover
            .removals
            .iter()
            .map(|r| r.name())
            .collect::<Vec<_>>()
            .join(", "),
        scenario.failover.rounds
    );
    match run_election(kind, scenario, endpoints, run_dir, control, env).await {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("{e:#}");
            eprintln!("lockbench: {kind}: error: {msg}");
            build::failed_result(kind.name(), &scenario.workload, msg)
        }
    }
}

/// Runs the failover workload against `kind` and returns its result.
pub async fn run_election(
    kind: ElectionKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    control: RunControl,
    env: &RunEnv,
) -> anyhow::Result<BackendResult> {
    let name = kind.name();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let election_name = format!("{}-{stamp:x}", scenario.name.replace('/', "-"));
    let info = with_elector!(kind, scenario, endpoints, &election_name, |e| e.info());
    let (history, writer) = run_dir.history_writer(name)?;
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let mut run = Run {
        scenario,
        kind,
        endpoints,
        env,
        run_dir,
        clock: RunClock::start(),
        election_name,
        tracker: Tracker::default(),
        events_tx,
        events_rx,
        history,
        faults: Vec::new(),
        slots: BTreeMap::new(),
        dead: Vec::new(),
        paused: BTreeSet::new(),
        next_id: 1,
        stop: control.stop.subscribe(),
    };
    let removals = &scenario.failover.removals;
    let mut server = (removals.contains(&Removal::ServerKill)
        || removals.contains(&Removal::Partition))
    .then(|| {
        env.managed_state.as_ref().map(|dir| {
            use rand::SeedableRng;
            lockbench_chaos::ServerNemesis::new(
                lockbench_cluster::Cluster::new(dir.clone()),
                group_of(kind),
                rand_chacha::ChaCha8Rng::seed_from_u64(scenario.seed ^ 0x454c_4543),
            )
        })
    })
    .flatten();
    let outcome = drive(&mut run, &scenario.failover, &mut server).await;
    // Teardown, whatever happened: mark the end of the rounds (the checker's last window
    // ends here), heal servers, stop every candidate, drain their ops.
    run.record_fault(
        lockbench_analysis::failover::END,
        FaultPhase::Start,
        vec!["candidates".into()],
        "rounds over: every candidate told to stop".into(),
        true,
    );
    if let Some(n) = server.as_mut() {
        for e in n.heal_all(&run.clock).await {
            run.log_fault(e);
        }
    }
    let slots = std::mem::take(&mut run.slots);
    for (_, p) in slots {
        p.finish(FINISH_BUDGET).await;
    }
    for p in std::mem::take(&mut run.dead) {
        p.reap().await;
    }
    let cleanup = with_elector!(kind, scenario, endpoints, &run.election_name, |e| {
        e.cleanup().await;
        Ok::<(), anyhow::Error>(())
    });
    if let Err(e) = cleanup {
        tracing::warn!(error = %e, "cannot clean the election's state up");
    }
    let Run {
        mut events_rx,
        events_tx,
        history,
        mut tracker,
        faults,
        ..
    } = run;
    drop(events_tx);
    while let Ok(Some(ev)) = tokio::time::timeout(FINISH_BUDGET, events_rx.recv()).await {
        tracker.apply(&ev);
        if let CandidateEvent::Op(op) = ev {
            let _ = history.send(vec![op]);
        }
    }
    drop(history);
    let ops = writer.await??;
    outcome?;
    let figures = lockbench_analysis::failover::check(&History::with_faults(ops, faults));
    let mut result = build::failed_result(name, &scenario.workload, String::new());
    result.status = if *control.stop.borrow() {
        "interrupted"
    } else {
        "ok"
    }
    .into();
    result.error = None;
    let episodes = figures.split_brain.len() as u64;
    result.safety.verdict = if episodes == 0 { "valid" } else { "invalid" }.into();
    result.safety.mutex_violations = episodes;
    result.safety.overlapping_grants = episodes;
    result.safety.overlap_ms = figures.split_brain.iter().map(|e| e.ms).sum();
    result.safety.max_overlap_ms = figures.split_brain.iter().map(|e| e.ms).fold(0.0, f64::max);
    result.failover = Some(FailoverResult {
        candidates: scenario.workload.clients,
        recipe: info,
        figures,
    });
    Ok(result)
}

async fn drive(
    run: &mut Run<'_>,
    knobs: &FailoverKnobs,
    server: &mut Option<lockbench_chaos::ServerNemesis>,
) -> anyhow::Result<()> {
    for slot in 0..run.scenario.workload.clients {
        run.spawn(slot).await?;
    }
    for &removal in &knobs.removals {
        for _ in 0..knobs.rounds {
            if *run.stop.borrow() {
                return Ok(());
            }
            run.round(removal, server).await?;
        }
    }
    Ok(())
}

/// The servers an election recipe runs on.
fn group_of(kind: ElectionKind) -> lockbench_cluster::Group {
    match kind {
        ElectionKind::ZkElection => lockbench_cluster::Group::Zookeeper,
        ElectionKind::EtcdElection | ElectionKind::EtcdLeaseElection => {
            lockbench_cluster::Group::Etcd
        }
        ElectionKind::RedisLeaseElection => lockbench_cluster::Group::Redis,
    }
}
