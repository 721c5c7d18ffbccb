//! One run of the failover workload against one recipe: candidate processes, and the rounds
//! that remove the leader (see the crate's docs for the shape).

use crate::tracker::Tracker;
use crate::{Hosts, READY_BUDGET, Watch};
use anyhow::Context;
use lockbench_chaos::Nemesis;
use lockbench_core::{
    ClientId, ElectionKind, Endpoints, Fault, FaultEvent, FaultKind, FaultPhase, PartitionSpec,
    Removal, RunClock, Scenario, Targets,
};
use lockbench_launch::worker_name;
use lockbench_report::RunDir;
use lockbench_workloads::candidate::{CandidateEvent, CandidateJob, CandidateProcess, ToCandidate};
use nix::sys::signal::Signal;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// One run of the failover workload against one recipe.
pub(crate) struct Run<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) kind: ElectionKind,
    pub(crate) endpoints: &'a Endpoints,
    pub(crate) hosts: &'a Hosts,
    pub(crate) run_dir: &'a RunDir,
    pub(crate) observer: &'a dyn Watch,
    pub(crate) clock: RunClock,
    pub(crate) election_name: String,
    pub(crate) tracker: Tracker,
    pub(crate) events_tx: mpsc::UnboundedSender<CandidateEvent>,
    pub(crate) events_rx: mpsc::UnboundedReceiver<CandidateEvent>,
    pub(crate) history: mpsc::UnboundedSender<Vec<lockbench_core::Op>>,
    pub(crate) faults: Vec<FaultEvent>,
    /// Live candidate processes by slot.
    pub(crate) slots: BTreeMap<u32, CandidateProcess>,
    /// Processes killed, kept until reaped.
    pub(crate) dead: Vec<CandidateProcess>,
    /// Candidates stopped (paused) right now.
    pub(crate) paused: BTreeSet<u32>,
    pub(crate) next_id: u32,
    pub(crate) stop: watch::Receiver<bool>,
    /// The round intervals' random extra, seeded from the scenario.
    pub(crate) rng: rand_chacha::ChaCha8Rng,
}

impl Run<'_> {
    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn live(&self) -> BTreeSet<u32> {
        self.slots
            .values()
            .map(|p| p.candidate.0)
            .filter(|c| !self.paused.contains(c) && !self.tracker.gone.contains(c))
            .collect()
    }

    pub(crate) fn record_fault(
        &mut self,
        fault: FaultKind,
        phase: FaultPhase,
        targets: Vec<String>,
        note: String,
        applied: bool,
    ) {
        let e = FaultEvent::now(&self.clock, fault, phase, targets, note, applied);
        self.log_fault(e);
    }

    pub(crate) fn log_fault(&mut self, e: FaultEvent) {
        self.observer.fault(self.name(), &e);
        if let Err(err) = self.run_dir.append_fault(self.name(), &e) {
            tracing::warn!(error = %err, "cannot record a fault event");
        }
        self.faults.push(e);
    }

    pub(crate) fn handle(&mut self, ev: CandidateEvent) {
        self.tracker.apply(&ev);
        if let CandidateEvent::Op(op) = ev {
            let _ = self.history.send(vec![op]);
        }
    }

    /// Processes candidate events until `done` holds, `budget` runs out or the run is
    /// stopped; returns whether `done` held.
    pub(crate) async fn wait_until(
        &mut self,
        budget: Duration,
        done: impl Fn(&Self) -> bool,
    ) -> bool {
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
    pub(crate) async fn spawn(&mut self, slot: u32) -> anyhow::Result<()> {
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
        // Its stderr (the ZooKeeper client's warning on every failed reconnect while a server
        // is down, ...) goes to the run's log file, not to the terminal.
        let commands = &self.hosts.commands;
        let cmd = commands.command(slot).await?;
        let mut p = CandidateProcess::spawn(host.clone(), cmd, &job, self.events_tx.clone())
            .await
            .with_context(|| format!("cannot start candidate {id} on {host}"))?;
        p.pid = commands.pid(slot, p.pid).await?;
        p.via_docker = commands.container(slot).filter(|_| commands.via_docker());
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

    pub(crate) fn slot_of(&self, candidate: u32) -> Option<u32> {
        self.slots
            .iter()
            .find(|(_, p)| p.candidate.0 == candidate)
            .map(|(&s, _)| s)
    }

    /// Waits for a settled leader among the live candidates.
    pub(crate) async fn settle(&mut self) -> Option<(u32, u64)> {
        let budget = self.scenario.failover.round_timeout;
        self.wait_until(budget, |r| r.tracker.settled(&r.live()).is_some())
            .await;
        self.tracker.settled(&self.live())
    }

    /// Waits until the election settled on a leadership other than `old`.
    pub(crate) async fn settle_elsewhere(&mut self, old: (u32, u64)) {
        let budget = self.scenario.failover.round_timeout;
        self.wait_until(budget, |r| {
            r.tracker.settled(&r.live()).is_some_and(|l| l != old)
        })
        .await;
    }

    pub(crate) async fn round(
        &mut self,
        removal: Removal,
        server: &mut Option<lockbench_chaos::ServerNemesis>,
    ) -> anyhow::Result<()> {
        let Some((leader, epoch)) = self.settle().await else {
            if !*self.stop.borrow() {
                self.observer.warning(&format!(
                    "{}: no settled leader within {:?}; skipping a {} round",
                    self.name(),
                    self.scenario.failover.round_timeout,
                    removal.name()
                ));
            }
            return Ok(());
        };
        // Let followers' observations and the leader's renewals run for a while.
        // Plus a seeded random extra up to the interval, so removals do not all land at the
        // same point of the leader's heartbeat or renewal cycle.
        let interval = self.scenario.failover.interval;
        let extra = interval.mul_f64(rand::Rng::random::<f64>(&mut self.rng));
        self.wait_until(interval + extra, |_| false).await;
        if *self.stop.borrow() {
            return Ok(());
        }
        let target = format!("c{leader}");
        let slot = self.slot_of(leader).context("the leader has no process")?;
        match removal {
            Removal::Resign => {
                self.slots[&slot].send(ToCandidate::Resign);
                self.record_fault(
                    FaultKind::Resign,
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
                    FaultKind::Kill,
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
            Removal::Pause => self.remove_by_pause(slot, (leader, epoch)).await,
            Removal::Partition => {
                self.remove_by_partition(slot, (leader, epoch), server)
                    .await
            }
            Removal::ServerKill => self.remove_by_server_kill((leader, epoch), server).await,
        }
        Ok(())
    }
    /// `pause`: SIGSTOP of the leader's process for `failover.pause`, then SIGCONT.
    async fn remove_by_pause(&mut self, slot: u32, (leader, epoch): (u32, u64)) {
        let target = format!("c{leader}");
        let pause = lockbench_registry::leader_pause(self.scenario, self.kind);
        let paused_at = Instant::now();
        let stopped = self.slots[&slot].signal(Signal::SIGSTOP);
        let pid = self.slots[&slot].pid;
        self.record_fault(
            FaultKind::Pause,
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
            FaultKind::Pause,
            FaultPhase::Stop,
            vec![target],
            format!("SIGCONT pid {pid}"),
            resumed.is_ok(),
        );
        // The resumed candidate learns it lost and observes the new leader.
        self.settle().await;
    }

    /// `partition`: the leader's client host cut off from every other host, then healed.
    async fn remove_by_partition(
        &mut self,
        slot: u32,
        (leader, epoch): (u32, u64),
        server: &mut Option<lockbench_chaos::ServerNemesis>,
    ) {
        let target = format!("c{leader}");
        let Some(nemesis) = server.as_mut() else {
            self.record_fault(
                FaultKind::Partition,
                FaultPhase::Start,
                vec![target],
                "partitions need the managed cluster".into(),
                false,
            );
            return;
        };
        let cut_for = lockbench_registry::leader_pause(self.scenario, self.kind);
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
            return;
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

    /// `server-kill`: the system's leader server killed, restarted once the round settled.
    async fn remove_by_server_kill(
        &mut self,
        (leader, epoch): (u32, u64),
        server: &mut Option<lockbench_chaos::ServerNemesis>,
    ) {
        let Some(nemesis) = server.as_mut() else {
            self.record_fault(
                FaultKind::Kill,
                FaultPhase::Start,
                vec!["leader-server".into()],
                "server faults need the managed cluster".into(),
                false,
            );
            return;
        };
        let fault = Fault::Kill {
            targets: Targets::Leader,
        };
        for e in nemesis.apply(&fault, &self.clock).await {
            self.log_fault(e);
        }
        // Give the election the time a dead leader would need to be replaced; a
        // leader that survives the server's death keeps leading.
        let expiry = lockbench_registry::election_expiry(self.scenario, self.kind);
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
