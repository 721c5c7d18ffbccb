//! The fault loop of one backend's run: the fault schedule applied at its times through the
//! nemeses the run composes (client processes, the cluster's server nemesis, link proxies),
//! then healed; and the fencing workload's holder pauses (Kleppmann's pause). Both record
//! every fault window as events on the run clock, in the same history as the ops.

use crate::coordinator::{Ctx, Window, Workers};
use crate::respawn::client_process;
use lockbench_chaos::{ClientNemesis, Composite, Nemesis};
use lockbench_core::{FaultEvent, FaultPhase, Nanos, RunClock};
use lockbench_workloads::Granted;
use lockbench_workloads::schedule;
use lockbench_workloads::worker::{ToWorker, WorkerHandle};
use nix::sys::signal::Signal;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The fault loop's tasks while the run goes on. Holds the link proxies: they stay up until
/// [`Running::into_links`]' value is dropped, after every worker has finished and the
/// coordinator's own client (whose endpoints are proxy addresses) has read the servers'
/// counters through them.
pub(crate) struct Running {
    pauses: Option<tokio::task::JoinHandle<u64>>,
    schedule: Option<tokio::task::JoinHandle<()>>,
    _links: Option<Arc<lockbench_chaos::LinkProxies>>,
}

impl Running {
    /// The link proxies, to be kept as long as anything still talks through them.
    pub(crate) fn into_links(self) -> Option<Arc<lockbench_chaos::LinkProxies>> {
        self._links
    }

    /// Waits for both tasks (the run's stop flag is set); returns the holder pauses applied.
    pub(crate) async fn finish(&mut self) -> u64 {
        let holder_pauses = match self.pauses.take() {
            Some(p) => p.await.unwrap_or(0),
            None => 0,
        };
        if let Some(n) = self.schedule.take() {
            let _ = n.await;
        }
        holder_pauses
    }
}

/// Starts the holder's pauses (fencing workload) and the fault schedule (when the scenario
/// has faults). The link proxies stay up until the schedule's task ends.
pub(crate) fn start(
    cx: &Ctx<'_>,
    workers: &mut Workers,
    window: &Window,
    links: Option<lockbench_chaos::LinkProxies>,
    holder_pause: Duration,
    events: &mpsc::UnboundedSender<FaultEvent>,
) -> Running {
    let granted = workers.granted.take();
    // The holder is signalable: `dialled` refuses a fencing run on workers it cannot signal.
    let holder = workers.running.first().and_then(|w| w.handle());
    let pauses = granted
        .filter(|_| cx.plan.fencing)
        .zip(holder)
        .map(|(granted, holder)| {
            tokio::spawn(pause_holder(
                granted,
                holder,
                holder_pause,
                cx.clock,
                events.clone(),
                cx.control.stop.subscribe(),
            ))
        });
    let links = links.map(Arc::new);
    let kept = links.clone();
    let schedule = (!cx.scenario.faults.is_empty()).then(|| {
        let steps = schedule::plan(&cx.scenario.faults, cx.scenario.seed, cx.scenario.duration);
        let client = ClientNemesis::new(
            workers
                .running
                .iter()
                .filter_map(|w| w.handle())
                .map(|h| client_process(&h))
                .collect(),
            workers.holding.clone(),
        )
        .with_respawn(
            crate::respawn::Respawner {
                commands: cx.env.worker_commands(),
                jobs: workers.jobs.clone(),
                sinks: workers.sinks.clone(),
                start: window.start,
                started: workers.respawned.clone(),
                dialled: workers.dialled.clone(),
            }
            .into_respawn(),
        );
        let links = links.and_then(|p| cx.env.cluster.link_nemesis(p, cx.kind, cx.scenario.seed));
        let mut server = cx.env.cluster.server_nemesis(cx.kind, cx.scenario.seed);
        if let Some(dialled) = &workers.dialled {
            server.add_client_hosts(dialled.launched.client_hosts());
        }
        let nemesis = Composite {
            client,
            server,
            links,
        };
        tokio::spawn(run_schedule(
            nemesis,
            steps,
            cx.clock,
            window.measure_start,
            events.clone(),
            cx.control.stop.subscribe(),
        ))
    });
    Running {
        pauses,
        schedule,
        _links: kept,
    }
}

/// Kleppmann's pause: after each grant the holder reports, stop the holder's process for
/// `pause`, resume it, and only then let it write. Returns how many pauses were applied.
async fn pause_holder(
    mut granted: mpsc::UnboundedReceiver<Granted>,
    holder: WorkerHandle,
    pause: Duration,
    clock: RunClock,
    events: mpsc::UnboundedSender<FaultEvent>,
    mut stop: watch::Receiver<bool>,
) -> u64 {
    let mut pauses = 0;
    loop {
        let g = tokio::select! {
            g = granted.recv() => match g { Some(g) => g, None => break },
            _ = stop.wait_for(|s| *s) => break,
        };
        let stopped = holder.signal(Signal::SIGSTOP);
        if stopped.is_err() && run_ends_within(&mut stop, RUN_END_GRACE).await {
            // The holder's worker ended its run on its own clock (a client container's worker
            // exits and its container goes with it) as this grant came: nothing was paused,
            // and the run is over, so there is no fault window to record.
            tracing::info!(
                holder = %holder.name,
                "the last grant came as the run ended: its holder was not paused"
            );
            break;
        }
        let token = g
            .token
            .map(|t| t.0.to_string())
            .unwrap_or_else(|| "none".into());
        let _ = events.send(FaultEvent::now(
            &clock,
            "pause",
            FaultPhase::Start,
            vec![holder.name.clone()],
            match &stopped {
                Ok(()) => format!(
                    "SIGSTOP {} right after its grant of {} (client {}, token {token}), before its write, for {}",
                    holder.process(),
                    g.key,
                    g.client,
                    humantime::format_duration(pause)
                ),
                Err(e) => format!("SIGSTOP failed: {e}"),
            },
            stopped.is_ok(),
        ));
        if stopped.is_ok() {
            pauses += 1;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
        let resumed = holder.signal(Signal::SIGCONT);
        let _ = events.send(FaultEvent::now(
            &clock,
            "pause",
            FaultPhase::Stop,
            vec![holder.name.clone()],
            format!(
                "SIGCONT {}; it now writes with token {token}",
                holder.process()
            ),
            resumed.is_ok(),
        ));
        holder.send(ToWorker::Write);
    }
    // Never leave the holder stopped.
    let _ = holder.signal(Signal::SIGCONT);
    pauses
}

/// How long after a failed SIGSTOP the run's end may come for the failure to be the run's end
/// (the holder's worker gone with it), not a fault that could not be applied.
const RUN_END_GRACE: Duration = Duration::from_secs(1);

/// Whether the run's stop flag is set within `grace`.
async fn run_ends_within(stop: &mut watch::Receiver<bool>, grace: Duration) -> bool {
    matches!(
        tokio::time::timeout(grace, stop.wait_for(|s| *s)).await,
        Ok(Ok(_))
    )
}

/// Applies the schedule's steps at their times, then heals everything.
async fn run_schedule<N: Nemesis>(
    mut nemesis: N,
    steps: Vec<schedule::Step>,
    clock: RunClock,
    measure_start: Nanos,
    events: mpsc::UnboundedSender<FaultEvent>,
    mut stop: watch::Receiver<bool>,
) {
    for step in steps {
        let at = clock.instant_at(measure_start.after(step.at));
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        for e in nemesis.apply(&step.fault, &clock).await {
            let _ = events.send(e);
        }
    }
    for e in nemesis.heal_all(&clock).await {
        let _ = events.send(e);
    }
}
