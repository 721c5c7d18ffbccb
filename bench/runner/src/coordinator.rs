//! The coordinator's run of one backend: in-process client slots, worker processes, the
//! fenced resource service, the fencing holder's pauses and the fault schedule, all on one
//! clock, merged into one history and one result.
//!
//! Why this shape: the in-process slots stay exactly the contention hot path (no IPC per op);
//! only slots a fault must be able to stop for real run as worker processes
//! (`workload.processes = "workers"`, or the fencing workload's holder, slot 0). Every process
//! connects first; the coordinator then fixes one start time on the run clock so that warm-up
//! and the measured window are the same everywhere. Faults and holder pauses are recorded as
//! fault events in the same `history.jsonl.zst` the moment they happen. Workers that dial in
//! (`[workers] launcher = "dial" | "swarm"`, [`lockbench_launch::start_dialled`]) take the
//! place of worker processes: every client slot (the fencing workload: its holder) runs in them, each on its
//! own clock, and the result gets a `clocks` section (the `clock_report` module). The herd
//! workload is the contention loop with the backend's wake-up and watch-notification counters
//! read around it (and the servers' watch gauge sampled mid-run), turned into `fanout` per
//! release.

use crate::assemble::{self, Measured};
use crate::observer::Observer;
use crate::placement::RunEnv;
use anyhow::Context;
use lockbench_analysis::cross_check::CounterReadings;
use lockbench_analysis::pass::{Analysed, Params, Pass};
use lockbench_core::scenario::{Processes, WorkloadKind};
use lockbench_core::{
    Backend, BackendKind, Endpoints, FaultEvent, History, Nanos, RunClock, Scenario,
    ServerObservation,
};
use lockbench_launch::{DialIn, Readmit, RunWorker, worker_name};
use lockbench_report::RunDir;
use lockbench_report::run_dir::Written;
use lockbench_results::BackendResult;
use lockbench_results::model::FencingRun;
use lockbench_workloads::worker::{ToWorker, WorkerHandle, merge_outputs};
use lockbench_workloads::{
    ContentionRun, FencedResource, Granted, Job, ResourceService, RunControl, SlotOptions,
    WorkerSinks, run_slots,
};
use nix::sys::signal::Signal;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long workers get to connect their clients.
const READY_BUDGET: Duration = Duration::from_secs(60);
/// How long a worker gets to send its stats after being told to stop.
const FINISH_BUDGET: Duration = Duration::from_secs(30);
/// How often the coordinator looks at [`Backend::broken`] during a run.
const BROKEN_POLL: Duration = Duration::from_millis(100);

/// The slot plan: which client slots run as worker processes and which in this process, and
/// how the run ends (after `duration`, or by a count over every process).
pub(crate) struct SlotPlan {
    pub(crate) worker_slots: Vec<u32>,
    pub(crate) local_slots: Vec<u32>,
    /// Stop by count over every process: the coordinator counts (see `count_across`).
    pub(crate) count_across: Option<u64>,
    /// A count and no duration: no end time.
    pub(crate) unbounded: bool,
    /// The measured window plus, with faults, the recovery.
    pub(crate) duration: Duration,
    pub(crate) fencing: bool,
}

impl SlotPlan {
    fn of(scenario: &Scenario) -> SlotPlan {
        let w = &scenario.workload;
        let fencing = w.kind == WorkloadKind::Fencing;
        let duration = scenario.duration
            + if scenario.faults.is_empty() {
                Duration::ZERO
            } else {
                scenario.recovery
            };
        let dialled = scenario.workers.is_some_and(|s| s.dials_in());
        let worker_slots: Vec<u32> = match (w.processes, fencing) {
            (Processes::Workers, _) => (0..w.clients).collect(),
            (Processes::InProcess, false) if dialled => (0..w.clients).collect(),
            (Processes::InProcess, true) => vec![0],
            (Processes::InProcess, false) => Vec::new(),
        };
        let local_slots: Vec<u32> = (0..w.clients)
            .filter(|s| !worker_slots.contains(s))
            .collect();
        let count_across = w.acquisitions.filter(|_| !worker_slots.is_empty());
        SlotPlan {
            unbounded: count_across.is_some() && duration.is_zero(),
            worker_slots,
            local_slots,
            count_across,
            duration,
            fencing,
        }
    }
}

/// What one backend's run shares between its phases.
pub(crate) struct Ctx<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) endpoints: &'a Endpoints,
    pub(crate) run_dir: &'a RunDir,
    pub(crate) env: &'a RunEnv,
    pub(crate) observer: &'a Arc<dyn Observer>,
    pub(crate) kind: lockbench_core::BackendKind,
    pub(crate) clock: RunClock,
    pub(crate) control: RunControl,
    pub(crate) plan: SlotPlan,
}

/// The worker processes of a run and what restarting one needs.
pub(crate) struct Workers {
    pub(crate) running: Vec<RunWorker>,
    /// What started workers that dialled in and restarts a killed one (finished at the end).
    pub(crate) dialled: Option<Arc<Readmit>>,
    pub(crate) jobs: std::collections::BTreeMap<u32, Job>,
    /// Restarted workers (after a `kill` of a client), finished with the others at the end.
    pub(crate) respawned: Arc<std::sync::Mutex<Vec<RunWorker>>>,
    pub(crate) sinks: WorkerSinks,
    /// The fenced resource as a service the workers reach (`None` without workers).
    pub(crate) service: Option<ResourceService>,
    pub(crate) granted: Option<mpsc::UnboundedReceiver<Granted>>,
    pub(crate) holding: Arc<[AtomicBool]>,
}

/// The in-process slots' task and its start barrier.
struct Local {
    task: Option<
        tokio::task::JoinHandle<
            Result<lockbench_workloads::RunOutput, lockbench_core::traits::BackendError>,
        >,
    >,
    connected: oneshot::Receiver<()>,
    start: Option<oneshot::Sender<Nanos>>,
}

/// The run window: its bounds and the tasks that end it.
pub(crate) struct Window {
    pub(crate) start: Nanos,
    pub(crate) measure_start: Nanos,
    pub(crate) measure_end: Nanos,
    pub(crate) counter: Option<tokio::task::JoinHandle<bool>>,
    pub(crate) timer: tokio::task::JoinHandle<()>,
}

/// Runs `scenario` against `backend` and builds its result, phase by phase: slot plan,
/// workers and in-process slots, start barrier, run window, fault loop, collection.
#[allow(clippy::too_many_arguments)]
pub async fn execute<B: Backend>(
    backend: B,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    control: RunControl,
    env: &RunEnv,
    mut links: Option<lockbench_chaos::LinkProxies>,
    observer: &Arc<dyn Observer>,
) -> anyhow::Result<BackendResult> {
    let backend = Arc::new(backend);
    // Servers that accept connections but never answer fail here, in seconds, naming the
    // address, before the counters or the clients wait on them.
    lockbench_workloads::connect::probe(backend.as_ref()).await?;
    // After the probe: an adapter's info names the library its first client said it runs.
    let info = backend.info();
    let herd = scenario.workload.kind == WorkloadKind::Herd;
    let before = Before::read(&backend, herd).await;
    let (history_tx, writer) = run_dir.history_writer(info.backend.name())?;
    let cx = Ctx {
        scenario,
        endpoints,
        run_dir,
        env,
        observer,
        kind: info.backend,
        clock: RunClock::start(),
        control,
        plan: SlotPlan::of(scenario),
    };
    let sampler = crate::resources::start(cx.kind, env, cx.clock, scenario.duration);
    let truth = scenario.observe_server.then(|| {
        let keys = scenario.workload.keys;
        crate::server_truth::start(&backend, cx.clock, keys, run_dir, cx.kind.name())
    });
    let resource = Arc::new(FencedResource::new(
        scenario.resource,
        scenario.workload.keys,
    ));
    let (events_tx, event_log) = spawn_event_log(&cx);
    let mut workers = start_workers(&cx, &resource, &history_tx, links.as_mut()).await?;
    // Workers in containers (Swarm tasks) are no descendants of this process: their CPU is
    // lockbench's all the same.
    let contained: Vec<u32> = workers
        .running
        .iter()
        .filter_map(|w| w.handle())
        .filter(|h| h.container.is_some())
        .map(|h| h.pid.as_raw() as u32)
        .collect();
    sampler.also_ours(&contained);
    let mut local = start_local(&cx, &backend, resource, history_tx);
    let start = start_barrier(&cx, &mut workers.running, &mut local).await?;
    let window = open_window(&cx, &workers.running, start);
    sampler.measure_from(window.measure_start);
    let mid_run = before.wakeups.is_some().then(|| {
        // The herd workload: sample the servers' watch gauge in the middle of the measured
        // window, when every client is queued or holding.
        let backend = backend.clone();
        let at = cx
            .clock
            .instant_at(window.measure_start.after(cx.plan.duration / 2));
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            backend.server_fanout().await
        })
    });
    let broken_watch = watch_broken(&backend, &cx.control);
    let workers_broken = workers.sinks.broken.clone();
    let holder_pause = lockbench_registry::holder_pause(scenario, cx.kind);
    let faults =
        crate::fault_loop::start(&cx, &mut workers, &window, links, holder_pause, &events_tx);
    drop(events_tx);
    let collected = collect(&cx, local.task.take(), workers, window, faults).await?;
    broken_watch.abort();
    let worker_broke = || {
        let slot = workers_broken.lock().unwrap_or_else(|e| e.into_inner());
        slot.clone()
    };
    if let Some(why) = backend.broken().or_else(worker_broke) {
        // A client's outcomes went through something that broke (an adapter): no verdict.
        anyhow::bail!("{why}; the history cannot be judged (docs/adapter-protocol.md)");
    }
    // Stopped before the analysis: its figures are the measured window's (the timer-lag probe
    // is exact only when stopped soon after the window ends, see `lockbench_capacity::timer_lag`).
    let resources = sampler
        .finish(collected.output.measure_start, collected.output.measure_end)
        .await;
    let written = writer.await??;
    // Every client stopped and every op is written: the history is complete.
    written.write_end(info.backend.name())?;
    let fault_events = event_log.await?;
    let truth = match truth {
        Some(running) => Some(running.finish().await),
        None => None,
    };
    let truth_history = match &truth {
        Some(t) => Some(truth_history(
            &written,
            info.backend.name(),
            &fault_events,
            &t.observations,
        )?),
        None => None,
    };
    let clocks = crate::clock_report::section(
        &written,
        info.backend.name(),
        scenario.workload.clients,
        &collected.clocks,
        truth_history.as_ref(),
    )?;
    let analysed = analyse(scenario, &collected.output, written, cx.kind, fault_events).await?;
    let after = backend.server_counters().await;
    let fanout = match before.wakeups {
        Some(wakeups_before) => Some(assemble::FanoutReadings {
            before: wakeups_before,
            after: backend.wakeups().unwrap_or(wakeups_before),
            server_before: before.fanout,
            server_after: backend.server_fanout().await,
            server_mid_run: finished_value(mid_run).await,
        }),
        None => None,
    };
    let counters = CounterReadings {
        before: before.counters,
        after,
        observer_requests: truth.as_ref().map_or(0, |t| t.requests),
    };
    let releases = analysed.releases;
    let (mut result, handoffs) = assemble::backend_result(Measured {
        info: &info,
        workload: &scenario.workload,
        output: &collected.output,
        analysed,
        counters: &counters,
    });
    if let Some(readings) = &fanout {
        result.fanout = Some(assemble::fanout(readings, releases));
    }
    if let (Some(t), Some(history)) = (truth, truth_history) {
        result.server_truth = Some(lockbench_analysis::verdict::server_truth(
            &history, t.failed, t.requests,
        ));
    }
    result.resources = Some(resources);
    if let Some(judged) = clocks {
        for note in lockbench_analysis::across_clocks::reconcile(
            &mut result.safety,
            &judged.clocks.judgement,
            &judged.certain,
        ) {
            cx.observer
                .note(&format!("{name}: {note}", name = cx.kind.name()));
        }
        result.clocks = Some(judged.clocks);
    }
    if cx.plan.fencing {
        result.fencing = Some(FencingRun {
            pause_ms: holder_pause.as_secs_f64() * 1e3,
            holder_pauses: collected.holder_pauses,
            resource: format!("{:?}", scenario.resource).to_lowercase(),
        });
    }
    let name = cx.kind.name();
    run_dir.write_histogram(name, "acquire", &collected.output.acquire_latency())?;
    run_dir.write_histogram(name, "acquire-service", &collected.output.acquire_service())?;
    run_dir.write_histogram(name, "handoff", &handoffs)?;
    Ok(result)
}

/// Server-side truth (observed runs only, chaos scenarios of seconds): backend `name`'s ops
/// read back in time order, with the fault events and the observations, in memory.
fn truth_history(
    written: &Written,
    name: &str,
    fault_events: &[FaultEvent],
    observations: &[ServerObservation],
) -> anyhow::Result<History> {
    let ops: Vec<lockbench_core::Op> = lockbench_core::history::ordered_ops(
        &written.path,
        written.offset,
        Some(name),
        written.lateness.max,
    )?
    .collect::<Result<_, _>>()
    .map_err(|e| anyhow::anyhow!("history out of order: {e:?}"))?;
    Ok(History::with_faults(ops, fault_events.to_vec()).with_server(observations.to_vec()))
}

/// The analysis pass over the written history: read back from disk as a time-ordered stream,
/// never held in memory.
async fn analyse(
    scenario: &Scenario,
    output: &lockbench_workloads::RunOutput,
    written: Written,
    kind: BackendKind,
    fault_events: Vec<FaultEvent>,
) -> anyhow::Result<Analysed> {
    let params = Params {
        workload: scenario.workload.clone(),
        measure_start: output.measure_start,
        measure_end: output.measure_end,
        stall_alarm: scenario.stall_alarm,
    };
    let name = kind.name();
    Ok(tokio::task::spawn_blocking(move || {
        let w = &written;
        // Complete (its end line is written): no horizon.
        Pass::run_written(
            &params,
            &w.path,
            w.offset,
            Some(name),
            &fault_events,
            &w.lateness,
            None,
        )
    })
    .await??)
}

/// The backend's counters read before the run (request counters; with the herd workload,
/// its wake-up and the servers' fan-out counters).
struct Before {
    counters: Result<lockbench_core::ServerCounters, String>,
    wakeups: Option<lockbench_core::Wakeups>,
    fanout: Result<Option<lockbench_core::ServerFanout>, String>,
}

impl Before {
    async fn read<B: Backend>(backend: &Arc<B>, herd: bool) -> Before {
        let counters = backend.server_counters().await;
        let wakeups = herd.then(|| backend.wakeups()).flatten();
        let fanout = match wakeups {
            Some(_) => backend.server_fanout().await,
            None => Ok(None),
        };
        Before {
            counters,
            wakeups,
            fanout,
        }
    }
}

/// The value of a task that has finished by now; a task still running is aborted.
async fn finished_value<T>(task: Option<tokio::task::JoinHandle<T>>) -> Option<T> {
    match task {
        Some(task) if task.is_finished() => task.await.ok(),
        Some(task) => {
            task.abort();
            None
        }
        None => None,
    }
}

/// Fault events: recorded in history.jsonl.zst as they happen, shown to the observer, and kept
/// for the checkers (the task's value).
fn spawn_event_log(
    cx: &Ctx<'_>,
) -> (
    mpsc::UnboundedSender<FaultEvent>,
    tokio::task::JoinHandle<Vec<FaultEvent>>,
) {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<FaultEvent>();
    let run_dir = cx.run_dir.clone();
    let observer = cx.observer.clone();
    let name = cx.kind.name();
    let task = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(e) = events_rx.recv().await {
            observer.fault(name, &e);
            if let Err(err) = run_dir.append_fault(name, &e) {
                tracing::warn!(error = %err, "cannot record a fault event");
            }
            all.push(e);
        }
        all
    });
    (events_tx, task)
}

/// Starts the worker processes, with the resource as a service they can reach.
async fn start_workers(
    cx: &Ctx<'_>,
    resource: &Arc<FencedResource>,
    history_tx: &mpsc::UnboundedSender<Vec<lockbench_core::Op>>,
    mut links: Option<&mut lockbench_chaos::LinkProxies>,
) -> anyhow::Result<Workers> {
    let plan = &cx.plan;
    // Workers someone else started, on other hosts, reach it at any of this host's addresses:
    // it listens on all of them, and each worker writes to the address it dialled the
    // coordinator at (`Job::resource`'s unspecified address, see `dispatch`).
    let bind = match cx.scenario.workers {
        Some(w) if w.launcher == lockbench_core::workers::Launcher::External => {
            std::net::IpAddr::from([0, 0, 0, 0])
        }
        _ => cx.env.bind,
    };
    let service = if plan.worker_slots.is_empty() {
        None
    } else {
        Some(
            ResourceService::start(resource.clone(), bind, cx.clock, history_tx.clone())
                .await
                .context("cannot start the fenced resource service")?,
        )
    };
    let (granted_tx, granted) = mpsc::unbounded_channel::<Granted>();
    let clients = cx.scenario.workload.clients;
    let holding: Arc<[AtomicBool]> = (0..clients).map(|_| AtomicBool::new(false)).collect();
    let sinks = WorkerSinks {
        history: history_tx.clone(),
        granted: granted_tx,
        control: cx.control.clone(),
        holding: holding.clone(),
        broken: Arc::default(),
    };
    let resource = service.as_ref().map(|s| s.addr());
    let job_of = |slots: Vec<u32>, endpoints: Endpoints| Job {
        backend: cx.kind,
        endpoints,
        scenario: cx.scenario.clone(),
        duration: plan.duration,
        holder: plan.fencing && slots.first() == Some(&0),
        slots,
        clock_origin: cx.clock.monotonic_origin(),
        resource: resource.expect("service when workers"),
        count_elsewhere: plan.count_across.is_some(),
        sent_at: None,
    };
    let mut running: Vec<RunWorker> = Vec::new();
    let mut jobs = std::collections::BTreeMap::new();
    let mut dialled = None;
    if let Some(spec) = cx.scenario.workers.filter(|s| s.dials_in())
        && !plan.worker_slots.is_empty()
    {
        let job_for = |slots: Vec<u32>| job_of(slots, cx.endpoints.clone());
        let warn = |w: &str| cx.observer.warning(w);
        let dial = DialIn {
            spec: &spec,
            slots: &plan.worker_slots,
            holder_paused: plan.fencing,
            bind: cx.env.bind,
            bridged: cx.env.servers_on_managed_bridge(),
            warn: &warn,
        };
        let (started, readmit) = lockbench_launch::start_dialled(dial, job_for, &sinks).await?;
        running = started;
        dialled = Some(Arc::new(readmit));
    } else {
        let commands = cx.env.worker_commands();
        for &slot in &plan.worker_slots {
            let endpoints = match links.as_mut() {
                Some(p) => p.endpoints_for(&worker_name(slot), cx.endpoints).await?,
                None => cx.endpoints.clone(),
            };
            let job = job_of(vec![slot], endpoints);
            let worker = commands.start(slot, &job, sinks.clone()).await?;
            running.push(RunWorker::Process(Box::new(worker)));
            jobs.insert(slot, job);
        }
    }
    Ok(Workers {
        running,
        dialled,
        jobs,
        respawned: Arc::new(std::sync::Mutex::new(Vec::new())),
        sinks,
        service,
        granted: Some(granted),
        holding,
    })
}

/// Starts the in-process slots; they connect, then wait for the common start time.
fn start_local<B: Backend>(
    cx: &Ctx<'_>,
    backend: &Arc<B>,
    resource: Arc<FencedResource>,
    history: mpsc::UnboundedSender<Vec<lockbench_core::Op>>,
) -> Local {
    let (connected_tx, connected) = oneshot::channel();
    let (start, start_rx) = oneshot::channel::<Nanos>();
    let run = ContentionRun {
        workload: cx.scenario.workload.clone(),
        seed: cx.scenario.seed,
        warmup: cx.scenario.warmup,
        duration: cx.plan.duration,
        clock: cx.clock,
        resource,
        history,
    };
    let task = (!cx.plan.local_slots.is_empty()).then(|| {
        tokio::spawn(run_slots(
            backend.clone(),
            run,
            cx.control.clone(),
            SlotOptions {
                slots: cx.plan.local_slots.clone(),
                remote_resource: None,
                start: Some(start_rx),
                holder: None,
                connected: Some(connected_tx),
                count_elsewhere: cx.plan.count_across.is_some(),
            },
        ))
    });
    Local {
        task,
        connected,
        start: Some(start),
    }
}

/// The start barrier: everyone connected, then one start time on the run clock for all.
async fn start_barrier(
    cx: &Ctx<'_>,
    workers: &mut [RunWorker],
    local: &mut Local,
) -> anyhow::Result<Nanos> {
    for worker in workers.iter_mut() {
        match tokio::time::timeout(READY_BUDGET, worker.ready()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("worker {}: {e}", worker.name()),
            Err(_) => anyhow::bail!(
                "worker {} did not connect within {READY_BUDGET:?}",
                worker.name()
            ),
        }
    }
    if local.task.is_some() && (&mut local.connected).await.is_err() {
        let task = local.task.take().expect("checked");
        return match task.await? {
            Err(e) => Err(e.into()),
            Ok(_) => Err(anyhow::anyhow!("in-process clients ended before starting")),
        };
    }
    let start = cx.clock.now().after(Duration::from_millis(100));
    if let Some(tx) = local.start.take() {
        let _ = tx.send(start);
    }
    for worker in workers.iter() {
        worker.send(ToWorker::Start { at: start });
    }
    Ok(start)
}

/// The run window: its bounds, the count over every process, and the timer whose end (or
/// Ctrl-C) stops everyone.
fn open_window(cx: &Ctx<'_>, workers: &[RunWorker], start: Nanos) -> Window {
    let measure_start = start.after(cx.scenario.warmup);
    let measure_end = if cx.plan.unbounded {
        Nanos(u64::MAX)
    } else {
        measure_start.after(cx.plan.duration)
    };
    let counter = cx.plan.count_across.map(|target| {
        tokio::spawn(count_across_processes(
            cx.control.clone(),
            cx.clock,
            measure_start,
            target,
        ))
    });
    let timer = {
        let stop = cx.control.stop.clone();
        let handles: Vec<WorkerHandle> = workers.iter().filter_map(|w| w.handle()).collect();
        let at = (!cx.plan.unbounded).then(|| cx.clock.instant_at(measure_end));
        tokio::spawn(async move {
            let mut rx = stop.subscribe();
            let end = async {
                match at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = end => {}
                _ = rx.wait_for(|s| *s) => {}
            }
            stop.send_replace(true);
            for h in &handles {
                let _ = h.signal(Signal::SIGCONT);
                h.send(ToWorker::Stop);
            }
        })
    };
    Window {
        start,
        measure_start,
        measure_end,
        counter,
        timer,
    }
}

/// What the collection phase hands to the checkers.
struct Collected {
    output: lockbench_workloads::RunOutput,
    holder_pauses: u64,
    /// The clock probes of the workers on their own clocks.
    clocks: Vec<crate::clock_report::Tapped>,
    /// The link proxies (link-fault runs): the coordinator's backend reaches the servers
    /// through them, so they stay up until its counters are read after the run.
    _links: Option<Arc<lockbench_chaos::LinkProxies>>,
}

/// Collection: waits for the end, stops the fault loop, finishes every worker (restarted ones
/// too) and merges every process's figures over the measured window.
async fn collect(
    cx: &Ctx<'_>,
    local: Option<
        tokio::task::JoinHandle<
            Result<lockbench_workloads::RunOutput, lockbench_core::traits::BackendError>,
        >,
    >,
    workers: Workers,
    window: Window,
    mut faults: crate::fault_loop::Running,
) -> anyhow::Result<Collected> {
    let local_output = match local {
        Some(task) => Some(task.await.context("in-process clients panicked")??),
        None => {
            let mut rx = cx.control.stop.subscribe();
            let _ = rx.wait_for(|s| *s).await;
            None
        }
    };
    cx.control.stop.send_replace(true);
    let holder_pauses = faults.finish().await;
    let mut stats = Vec::new();
    let mut worker_errors = Vec::new();
    let restarted = std::mem::take(&mut *workers.respawned.lock().expect("respawned workers"));
    // A restarted worker that dialled in is a new clock: its probes are its own.
    let clocks: Vec<_> = workers
        .running
        .iter()
        .chain(&restarted)
        .filter_map(|w| w.clock())
        .collect();
    let all = workers.running.into_iter().chain(restarted);
    for worker in all {
        let name = worker.name().to_string();
        match worker.finish(FINISH_BUDGET).await {
            Ok(s) => stats.extend(s),
            Err(e) => worker_errors.push(format!("{name}: {e}")),
        }
    }
    if let Some(dialled) = workers.dialled {
        dialled.finish().await;
    }
    window.timer.abort();
    // The stop flag is set by now, so the counter has returned or returns at once.
    let count_reached = match window.counter {
        Some(c) => c.await.unwrap_or(false),
        None => false,
    };
    drop(workers.service);
    let links = faults.into_links();
    let clock = cx.clock;
    let mut run_window = local_output.unwrap_or_else(|| lockbench_workloads::RunOutput {
        workers: Vec::new(),
        measure_start: window.measure_start,
        measure_end: clock
            .now()
            .min(window.measure_end)
            .max(window.measure_start),
        interrupted: clock.now() < window.measure_end,
    });
    if count_reached {
        run_window.interrupted = false;
    }
    if !worker_errors.is_empty() {
        cx.observer.warning(&format!(
            "{}: worker problems: {}",
            cx.kind.name(),
            worker_errors.join("; ")
        ));
    }
    let mut parts = run_window.workers.clone();
    parts.extend(stats);
    Ok(Collected {
        output: merge_outputs(parts, &run_window),
        holder_pauses,
        clocks,
        _links: links,
    })
}

/// Stops the run as soon as the backend says it broke (an adapter in this process broke its
/// protocol; workers report theirs as [`FromWorker::Broken`](lockbench_workloads::worker::FromWorker::Broken)):
/// nothing after the break can be judged, and the protocol promises the run's error within 5 s.
fn watch_broken<B: Backend>(backend: &Arc<B>, control: &RunControl) -> tokio::task::JoinHandle<()> {
    let (backend, stop) = (backend.clone(), control.stop.clone());
    tokio::spawn(async move {
        let mut stopped = stop.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(BROKEN_POLL) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
            if backend.broken().is_some() {
                stop.send_replace(true);
                return;
            }
        }
    })
}

/// Stop by count over every process (`workload.acquisitions` with worker processes): from the
/// start of the measured window, counts every slot's acquisitions (in-process slots as they
/// happen, worker slots as their op chunks arrive, up to a quarter second late) and stops the
/// run once `target` more were made. The lag means a run may end a little past the target;
/// the result reports what was measured. Returns whether the target was reached.
async fn count_across_processes(
    control: RunControl,
    clock: RunClock,
    measure_start: Nanos,
    target: u64,
) -> bool {
    let mut stop = control.stop.subscribe();
    tokio::select! {
        _ = tokio::time::sleep_until(clock.instant_at(measure_start).into()) => {}
        _ = stop.wait_for(|s| *s) => return false,
    }
    let base = control.acquisitions();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = stop.wait_for(|s| *s) => return false,
        }
        if control.acquisitions().saturating_sub(base) >= target {
            control.stop.send_replace(true);
            return true;
        }
    }
}
