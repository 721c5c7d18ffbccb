//! The failover workload: candidate processes, leader removals round after round, one
//! history, one result per election recipe. The run engine (`lockbench-runner`) picks the
//! workload and hands it the run's client hosts ([`Hosts`]) and whoever watches ([`Watch`]);
//! everything the workload does between is here.
//!
//! Why this shape: the quantity measured is a *transition* (a leader removed, a new one
//! elected, everyone told), so the run is driven by the election's state rather than by a
//! clock. The coordinator follows that state from the candidates' own ops as they arrive
//! (`Tracker`): before each removal it waits until the election has *settled* (exactly one
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
//! Candidates are worker processes on the run's client hosts ([`Hosts::commands`]).

mod elector;
mod round;
mod tracker;

pub use elector::run_candidate;

use lockbench_chaos::Nemesis;
use lockbench_core::election::FailoverKnobs;
use lockbench_core::{
    ElectionKind, Elector, Endpoints, FaultEvent, FaultKind, FaultPhase, Removal, RunClock,
    Scenario, Seed, Stream,
};
use lockbench_report::RunDir;
use lockbench_results::model::FailoverResult;
use lockbench_results::{BackendResult, Status, Validity};
use lockbench_workloads::RunControl;
use lockbench_workloads::candidate::CandidateEvent;
use round::Run;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tracker::Tracker;

/// Where the candidates run: the run's client hosts, as the engine placed them.
pub struct Hosts {
    /// What starts a worker process on client host `slot` (and finds its pid, its container).
    pub commands: lockbench_launch::WorkerCommands,
    /// The managed cluster's state directory, when the servers are the managed cluster's: the
    /// removals that act on servers (`server-kill`, `partition`) need it.
    pub managed_state: Option<PathBuf>,
}

/// Whoever watches the run, told as it happens (the engine's observer).
pub trait Watch: Send + Sync {
    /// A fault event of `recipe`'s run, the moment it is recorded.
    fn fault(&self, recipe: &str, event: &FaultEvent);

    /// Something went wrong that does not stop the run (a round without a settled leader).
    fn warning(&self, text: &str);
}

/// How long candidates get to connect.
pub(crate) const READY_BUDGET: Duration = Duration::from_secs(30);
/// How long a candidate gets to exit after `stop`.
pub(crate) const FINISH_BUDGET: Duration = Duration::from_secs(5);

/// Runs the failover workload against `kind` and returns its result.
pub async fn run_election(
    kind: ElectionKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    hosts: &Hosts,
    control: RunControl,
    observer: &dyn Watch,
) -> anyhow::Result<BackendResult> {
    let name = kind.name();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let election_name = format!("{}-{stamp:x}", scenario.name.replace('/', "-"));
    let elector = lockbench_registry::elector(kind, scenario, endpoints, &election_name)?;
    let info = elector.info();
    let (history, writer) = run_dir.history_writer(name)?;
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let mut run = Run {
        scenario,
        kind,
        endpoints,
        hosts,
        run_dir,
        observer,
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
        rng: Seed(scenario.seed).rng(Stream::FailoverRounds),
    };
    let removals = &scenario.failover.removals;
    let mut server = (removals.contains(&Removal::ServerKill)
        || removals.contains(&Removal::Partition))
    .then(|| {
        hosts.managed_state.clone().map(|dir| {
            lockbench_chaos::ServerNemesis::new(
                lockbench_cluster::Cluster::new(dir),
                lockbench_registry::election_group_of(kind),
                Seed(scenario.seed).rng(Stream::ServerTargets),
            )
        })
    })
    .flatten();
    let outcome = drive(&mut run, &scenario.failover, &mut server).await;
    // Teardown, whatever happened: mark the end of the rounds (the checker's last window
    // ends here), heal servers, stop every candidate, drain their ops.
    run.record_fault(
        FaultKind::End,
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
    elector.cleanup().await;
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
    let written = writer.await??;
    outcome?;
    written.write_end(name)?;
    // Elections are a few ops per second: the failover checker reads its history in memory.
    let history = written.read_in_memory(name, faults)?;
    let figures = lockbench_analysis::failover::check(&history);
    let mut result = BackendResult::failed(name, &scenario.workload, String::new());
    result.status = if *control.stop.borrow() {
        Status::Interrupted
    } else {
        Status::Ok
    };
    result.error = None;
    let episodes = figures.split_brain.len() as u64;
    result.safety.verdict = if episodes == 0 {
        Validity::Valid
    } else {
        Validity::Invalid
    };
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
