//! The fault loop of one backend's run: the fault schedule applied at its times through the
//! nemeses the run composes (client processes, the cluster's server nemesis, link proxies),
//! then healed; and the fencing workload's holder pauses (Kleppmann's pause). Both record
//! every fault window as events on the run clock, in the same history as the ops.

use crate::coordinator::{Ctx, Window, Workers};
use crate::respawn::client_process;
use lockbench_chaos::{ClientNemesis, Composite, Nemesis};
use lockbench_core::{Fault, FaultEvent, FaultKind, FaultPhase, Nanos, RunClock};
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
    // The holder is signalable: `lockbench_launch::start_dialled` refuses a fencing run on
    // workers it cannot signal.
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
        .with_respawn(crate::respawn::into_respawn(lockbench_launch::Respawner {
            commands: cx.env.worker_commands(),
            jobs: workers.jobs.clone(),
            sinks: workers.sinks.clone(),
            start: window.start,
            started: workers.respawned.clone(),
            dialled: workers.dialled.clone(),
        }));
        let links = links.and_then(|p| cx.env.cluster.link_nemesis(p, cx.kind, cx.scenario.seed));
        let mut server = cx.env.cluster.server_nemesis(cx.kind, cx.scenario.seed);
        if let Some(dialled) = &workers.dialled {
            server.add_client_hosts(dialled.client_hosts());
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
            FaultKind::Pause,
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
            FaultKind::Pause,
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
///
/// A step that comes as the run ends is not a fault window: on a loaded machine the schedule
/// can lag past the run's end, when a client container's worker has ended its run and its
/// container is gone, so `iptables` in it fails. A step's faults that were not applied are
/// therefore held for [`RUN_END_GRACE`]: the run's stop within it drops them (an info log
/// line says so), anything else (the grace over, the next step due) records them as faults
/// not applied. A step due after the stop flag is set is not applied at all; one that was due
/// earlier than [`RUN_END_GRACE`] before it, but never reached because the steps before took
/// that long, is recorded as not applied, with how far the schedule lagged ([`missed`]). A
/// step applied [`LATE`] or more after its time says so in its note.
async fn run_schedule<N: Nemesis>(
    mut nemesis: N,
    steps: Vec<schedule::Step>,
    clock: RunClock,
    measure_start: Nanos,
    events: mpsc::UnboundedSender<FaultEvent>,
    mut stop: watch::Receiver<bool>,
) {
    let mut held = Held::default();
    let due = |step: &schedule::Step| clock.instant_at(measure_start.after(step.at));
    'steps: for (i, step) in steps.iter().enumerate() {
        let at = due(step);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => break,
                _ = stop.wait_for(|s| *s) => {
                    missed(&steps[i..], due, &clock, &events);
                    break 'steps;
                }
                _ = tokio::time::sleep_until(held.until().into()), if held.any() => {
                    held.record(&events);
                }
            }
        }
        held.record(&events);
        if *stop.borrow() {
            missed(&steps[i..], due, &clock, &events);
            break;
        }
        let late = tokio::time::Instant::now()
            .into_std()
            .saturating_duration_since(at);
        for mut e in nemesis.apply(&step.fault, &clock).await {
            if late >= LATE {
                e.note.push_str(&format!(
                    "; applied {} after its time: the schedule lagged (the steps before it took \
                     that long to apply)",
                    seconds(late)
                ));
            }
            if e.applied {
                let _ = events.send(e);
            } else {
                held.hold(e);
            }
        }
    }
    if held.any() {
        let left = held
            .until()
            .saturating_duration_since(std::time::Instant::now());
        if run_ends_within(&mut stop, left).await {
            held.drop_at_run_end();
        }
        held.record(&events);
    }
    for e in nemesis.heal_all(&clock).await {
        let _ = events.send(e);
    }
}

/// How late a step may be applied before its note says so.
const LATE: Duration = Duration::from_millis(500);

/// Records, as not applied, the steps of `left` that open a fault and were due at least
/// [`RUN_END_GRACE`] before now (the run's stop): the schedule never reached them because the
/// steps before took that long. Without this a lagging schedule lost a fault silently.
fn missed(
    left: &[schedule::Step],
    due: impl Fn(&schedule::Step) -> std::time::Instant,
    clock: &RunClock,
    events: &mpsc::UnboundedSender<FaultEvent>,
) {
    let now = tokio::time::Instant::now().into_std();
    for step in left {
        let lag = now.saturating_duration_since(due(step));
        if lag < RUN_END_GRACE || !opens_a_window(&step.fault) {
            continue;
        }
        let _ = events.send(FaultEvent::not_applied(
            clock,
            step.fault.kind(),
            Vec::new(),
            format!(
                "NOT APPLIED: due {} before the run ended, the schedule never reached it (the \
                 steps before it took that long to apply or heal)",
                seconds(lag)
            ),
        ));
    }
}

/// Whether `fault` starts something (not an undo step: `heal`, `resume`, `start`).
fn opens_a_window(fault: &Fault) -> bool {
    !matches!(
        fault,
        Fault::Heal | Fault::Resume { .. } | Fault::Start { .. }
    )
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// A step's faults that were not applied, held until the run proves not to be ending.
#[derive(Default)]
struct Held {
    events: Vec<FaultEvent>,
    /// When the first of them failed.
    since: Option<std::time::Instant>,
}

impl Held {
    fn any(&self) -> bool {
        !self.events.is_empty()
    }

    fn hold(&mut self, e: FaultEvent) {
        self.since.get_or_insert_with(std::time::Instant::now);
        self.events.push(e);
    }

    /// When the grace of the held faults ends.
    fn until(&self) -> std::time::Instant {
        self.since.unwrap_or_else(std::time::Instant::now) + RUN_END_GRACE
    }

    /// Records the held faults as not applied.
    fn record(&mut self, events: &mpsc::UnboundedSender<FaultEvent>) {
        for e in self.events.drain(..) {
            let _ = events.send(e);
        }
        self.since = None;
    }

    /// The run ended within the grace: the held faults came as it ended.
    fn drop_at_run_end(&mut self) {
        for e in self.events.drain(..) {
            tracing::info!(
                fault = %e.fault,
                note = %e.note,
                "a scheduled fault came as the run ended and could not be applied: no fault window"
            );
        }
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{PartitionSpec, Targets};

    /// A nemesis of the harness's own tests: every fault fails to apply (as `iptables` in a
    /// client container that has gone), each heal succeeds.
    struct Failing;

    impl lockbench_chaos::Nemesis for Failing {
        async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
            vec![FaultEvent::not_applied(
                clock,
                fault.kind(),
                vec!["zk2".into()],
                "iptables failed: exit status: 137".into(),
            )]
        }

        async fn heal_all(&mut self, _clock: &RunClock) -> Vec<FaultEvent> {
            Vec::new()
        }
    }

    fn partition_at(at: Duration) -> schedule::Step {
        schedule::Step {
            at,
            fault: Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Leader),
            },
            entry: Some(0),
        }
    }

    /// Runs a schedule of one failing step at `at`, the run's stop set after `stop_after`;
    /// returns the events recorded.
    async fn recorded(at: Duration, stop_after: Duration) -> Vec<FaultEvent> {
        recorded_with(Failing, vec![partition_at(at)], stop_after).await
    }

    /// Runs `steps` on `nemesis`, the run's stop set after `stop_after`; returns the events
    /// recorded.
    async fn recorded_with<N: lockbench_chaos::Nemesis + Send + 'static>(
        nemesis: N,
        steps: Vec<schedule::Step>,
        stop_after: Duration,
    ) -> Vec<FaultEvent> {
        let clock = RunClock::start();
        let (events, mut received) = mpsc::unbounded_channel();
        let (stop, stopped) = watch::channel(false);
        let schedule = tokio::spawn(run_schedule(
            nemesis,
            steps,
            clock,
            Nanos(0),
            events,
            stopped,
        ));
        tokio::time::sleep(stop_after).await;
        let _ = stop.send(true);
        schedule.await.unwrap();
        let mut out = Vec::new();
        while let Ok(e) = received.try_recv() {
            out.push(e);
        }
        out
    }

    /// A nemesis of the harness's own tests: every fault applies, each after a wait of `.0`.
    struct Slow(Duration);

    impl lockbench_chaos::Nemesis for Slow {
        async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
            tokio::time::sleep(self.0).await;
            vec![FaultEvent::now(
                clock,
                fault.kind(),
                FaultPhase::Start,
                vec!["zk2".into()],
                "applied",
                true,
            )]
        }

        async fn heal_all(&mut self, _clock: &RunClock) -> Vec<FaultEvent> {
            Vec::new()
        }
    }

    /// Runs `steps` (at their offsets) on a nemesis that takes `apply` for each, the run's
    /// stop set after `stop_after`; returns the events recorded.
    async fn recorded_slow(
        steps: &[Duration],
        apply: Duration,
        stop_after: Duration,
    ) -> Vec<FaultEvent> {
        let steps = steps.iter().map(|at| partition_at(*at)).collect();
        recorded_with(Slow(apply), steps, stop_after).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_the_lagging_schedule_never_reached_is_recorded_not_applied() {
        let secs = Duration::from_secs;
        let events = recorded_slow(&[secs(1), secs(3)], secs(8), secs(6)).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(events[0].applied, "{events:?}");
        let missed = &events[1];
        assert!(!missed.applied, "{events:?}");
        assert!(missed.note.contains("never reached it"), "{}", missed.note);
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_applied_late_says_so() {
        let secs = Duration::from_secs;
        let events = recorded_slow(&[secs(1), secs(2)], secs(3), secs(20)).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(!events[0].note.contains("lagged"), "{}", events[0].note);
        assert!(
            events[1]
                .note
                .contains("after its time: the schedule lagged"),
            "{}",
            events[1].note
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_fault_that_fails_as_the_run_ends_is_no_window() {
        let events = recorded(Duration::from_secs(10), Duration::from_millis(10_300)).await;
        assert!(events.is_empty(), "{events:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_fault_that_fails_mid_run_is_recorded_not_applied() {
        let events = recorded(Duration::from_secs(10), Duration::from_secs(16)).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(!events[0].applied);
        assert!(events[0].note.starts_with("iptables failed"), "{events:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_due_after_the_stop_is_not_applied() {
        let events = recorded(Duration::from_secs(10), Duration::from_secs(5)).await;
        assert!(events.is_empty(), "{events:?}");
    }
}
