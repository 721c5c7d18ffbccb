//! The coordinator's run of one backend: in-process client slots, worker processes, the
//! fenced resource service, the fencing holder's pauses and the fault schedule, all on one
//! clock, merged into one history and one result.
//!
//! Why this shape: the in-process slots stay exactly the contention hot path (no IPC per op);
//! only slots a fault must be able to stop for real run as worker processes
//! (`workload.processes = "workers"`, or the fencing workload's holder, slot 0). Every process
//! connects first; the coordinator then fixes one start time on the run clock so that warm-up
//! and the measured window are the same everywhere. Faults and holder pauses are recorded as
//! fault events in the same `history.jsonl` the moment they happen. The herd workload is the
//! contention loop with the backend's wake-up and watch-notification counters read around it
//! (and the servers' watch gauge sampled mid-run), turned into `fanout` per release.

use crate::nemesis::{ClientNemesis, Composite, StandInServerNemesis};
use crate::placement::{RunEnv, worker_name};
use anyhow::Context;
use lockbench_chaos::Nemesis;
use lockbench_core::scenario::{Processes, WorkloadKind};
use lockbench_core::{
    Backend, Endpoints, FaultEvent, FaultPhase, History, Nanos, RunClock, Scenario,
};
use lockbench_report::build::{self, CounterReadings, Measured};
use lockbench_report::model::FencingRun;
use lockbench_report::{BackendResult, RunDir};
use lockbench_workloads::worker::{ToWorker, WorkerHandle, merge_outputs};
use lockbench_workloads::{
    ContentionRun, FencedResource, Granted, Job, ResourceService, RunControl, SlotOptions,
    WorkerProcess, WorkerSinks, run_slots, schedule,
};
use nix::sys::signal::Signal;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// How long workers get to connect their clients.
const READY_BUDGET: Duration = Duration::from_secs(60);
/// How long a worker gets to send its stats after being told to stop.
const FINISH_BUDGET: Duration = Duration::from_secs(30);

/// Runs `scenario` against `backend` and builds its result.
pub async fn execute<B: Backend>(
    backend: B,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    control: RunControl,
    env: &RunEnv,
    mut links: Option<lockbench_chaos::LinkProxies>,
) -> anyhow::Result<BackendResult> {
    let info = backend.info();
    let kind = info.backend;
    let name = kind.name();
    let backend = Arc::new(backend);
    // Servers that accept connections but never answer fail here, in seconds, naming the
    // address, before the counters or the clients wait on them (issue 11 item 8).
    lockbench_workloads::connect::probe(backend.as_ref()).await?;
    let before = backend.server_counters().await;
    let herd = scenario.workload.kind == WorkloadKind::Herd;
    // The herd workload's fan-out counters, read around the run like the request counters.
    let wakeups_before = herd.then(|| backend.wakeups()).flatten();
    let fanout_before = match wakeups_before {
        Some(_) => backend.server_fanout().await,
        None => Ok(None),
    };
    let (history_tx, writer) = run_dir.history_writer(name)?;
    let clock = RunClock::start();
    let sampler = crate::resources::start(kind, env, clock, scenario.duration);
    let w = &scenario.workload;
    let resource = Arc::new(FencedResource::new(scenario.resource, w.keys));
    let fencing = w.kind == WorkloadKind::Fencing;
    let duration = scenario.duration
        + if scenario.faults.is_empty() {
            Duration::ZERO
        } else {
            scenario.recovery
        };
    let worker_slots: Vec<u32> = match (w.processes, fencing) {
        (Processes::Workers, _) => (0..w.clients).collect(),
        (Processes::InProcess, true) => vec![0],
        (Processes::InProcess, false) => Vec::new(),
    };
    let local_slots: Vec<u32> = (0..w.clients)
        .filter(|s| !worker_slots.contains(s))
        .collect();
    // Stop by count over every process: the coordinator counts (see `count_across`).
    let count_across = w.acquisitions.filter(|_| !worker_slots.is_empty());
    let unbounded = count_across.is_some() && duration.is_zero();

    // Fault events: recorded in history.jsonl as they happen, and kept for the checkers.
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<FaultEvent>();
    let event_log = {
        let run_dir = run_dir.clone();
        tokio::spawn(async move {
            let mut all = Vec::new();
            while let Some(e) = events_rx.recv().await {
                announce_fault(name, &e);
                if let Err(err) = run_dir.append_fault(name, &e) {
                    tracing::warn!(error = %err, "cannot record a fault event");
                }
                all.push(e);
            }
            all
        })
    };

    // Worker processes, with the resource as a service they can reach.
    let service = if worker_slots.is_empty() {
        None
    } else {
        Some(
            ResourceService::start(resource.clone(), env.bind, clock, history_tx.clone())
                .await
                .context("cannot start the fenced resource service")?,
        )
    };
    let (granted_tx, granted_rx) = mpsc::unbounded_channel::<Granted>();
    let holding: Arc<[AtomicBool]> = (0..w.clients).map(|_| AtomicBool::new(false)).collect();
    let sinks = WorkerSinks {
        history: history_tx.clone(),
        granted: granted_tx,
        control: control.clone(),
        holding: holding.clone(),
    };
    let mut workers: Vec<WorkerProcess> = Vec::new();
    let mut jobs = std::collections::BTreeMap::new();
    for &slot in &worker_slots {
        let endpoints = match links.as_mut() {
            Some(p) => p.endpoints_for(&worker_name(slot), endpoints).await?,
            None => endpoints.clone(),
        };
        let job = Job {
            backend: kind,
            endpoints,
            scenario: scenario.clone(),
            duration,
            slots: vec![slot],
            holder: fencing && slot == 0,
            clock_origin: clock.monotonic_origin(),
            resource: service.as_ref().expect("service when workers").addr(),
            count_elsewhere: count_across.is_some(),
        };
        let cmd = env.worker_command(slot)?;
        let name = worker_name(slot);
        let worker = WorkerProcess::spawn(name.clone(), cmd, &job, sinks.clone())
            .await
            .with_context(|| format!("cannot start worker process {name}"))?;
        workers.push(worker);
        jobs.insert(slot, job);
    }
    // Restarted workers (after a `kill` of a client), finished with the others at the end.
    let respawned = Arc::new(std::sync::Mutex::new(Vec::<WorkerProcess>::new()));
    let respawn_sinks = sinks.clone();
    drop(sinks);

    // In-process slots.
    let (connected_tx, connected_rx) = oneshot::channel();
    let (start_tx, start_rx) = oneshot::channel::<Nanos>();
    let run = ContentionRun {
        workload: w.clone(),
        seed: scenario.seed,
        warmup: scenario.warmup,
        duration,
        clock,
        resource: resource.clone(),
        history: history_tx,
    };
    let local = (!local_slots.is_empty()).then(|| {
        tokio::spawn(run_slots(
            backend.clone(),
            run,
            control.clone(),
            SlotOptions {
                slots: local_slots,
                remote_resource: None,
                start: Some(start_rx),
                holder: None,
                connected: Some(connected_tx),
                count_elsewhere: count_across.is_some(),
            },
        ))
    });

    // Everyone connected, then one start time for all.
    for worker in &mut workers {
        match tokio::time::timeout(READY_BUDGET, worker.ready()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("worker {}: {e}", worker.name),
            Err(_) => anyhow::bail!(
                "worker {} did not connect within {READY_BUDGET:?}",
                worker.name
            ),
        }
    }
    if let Some(task) = local.as_ref() {
        if connected_rx.await.is_err() {
            let task = local.expect("checked");
            return match task.await? {
                Err(e) => Err(e.into()),
                Ok(_) => Err(anyhow::anyhow!("in-process clients ended before starting")),
            };
        }
        let _ = task;
    }
    let start = clock.now().after(Duration::from_millis(100));
    let _ = start_tx.send(start);
    for worker in &workers {
        worker.send(ToWorker::Start { at: start });
    }
    let measure_start = start.after(scenario.warmup);
    let measure_end = if unbounded {
        Nanos(u64::MAX)
    } else {
        measure_start.after(duration)
    };
    let counter = count_across.map(|target| {
        tokio::spawn(count_across_processes(
            control.clone(),
            clock,
            measure_start,
            target,
        ))
    });

    // The herd workload: sample the servers' watch gauge in the middle of the measured window,
    // when every client is queued or holding.
    let mid_run = wakeups_before.is_some().then(|| {
        let backend = backend.clone();
        let at = clock.instant_at(measure_start.after(duration / 2));
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            backend.server_fanout().await
        })
    });

    // The end of the run (or Ctrl-C) stops everyone.
    let timer = {
        let stop = control.stop.clone();
        let handles: Vec<WorkerHandle> = workers.iter().map(|w| w.handle()).collect();
        let at = (!unbounded).then(|| clock.instant_at(measure_end));
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

    // The fencing holder's pauses.
    let holder_pause = scenario.holder_pause(kind);
    let pauses = if fencing {
        let holder = workers[0].handle();
        Some(tokio::spawn(pause_holder(
            granted_rx,
            holder,
            holder_pause,
            clock,
            events_tx.clone(),
            control.stop.subscribe(),
        )))
    } else {
        drop(granted_rx);
        None
    };

    // The fault schedule. The link proxies stay up until the end of the run (`_links`).
    let links = links.map(Arc::new);
    let _links = links.clone();
    let nemesis_task = (!scenario.faults.is_empty()).then(|| {
        let steps = schedule::plan(&scenario.faults, scenario.seed, scenario.duration);
        let client = ClientNemesis::new(workers.iter().map(|w| w.handle()).collect(), holding)
            .with_respawner(crate::respawn::Respawner {
                commands: env.worker_commands(),
                jobs,
                sinks: respawn_sinks,
                start,
                started: respawned.clone(),
            });
        let (events, stop) = (events_tx.clone(), control.stop.subscribe());
        match &env.managed_state {
            // The managed cluster: the chaos crate's server nemesis (partitions in the
            // namespaces, pause, kill/start, clock jump).
            Some(dir) => {
                use rand::SeedableRng;
                let cluster = lockbench_cluster::Cluster::new(dir.clone());
                let links = links.map(|p| {
                    lockbench_chaos::LinkNemesis::new(
                        p,
                        &cluster,
                        lockbench_chaos::group_of(kind),
                        rand_chacha::ChaCha8Rng::seed_from_u64(scenario.seed ^ 0x4c49_4e4b),
                    )
                });
                let server = lockbench_chaos::ServerNemesis::new(
                    cluster,
                    lockbench_chaos::group_of(kind),
                    rand_chacha::ChaCha8Rng::seed_from_u64(scenario.seed ^ 0x5345_5256),
                );
                spawn_schedule(
                    Composite {
                        client,
                        server,
                        links,
                    },
                    steps,
                    clock,
                    measure_start,
                    events,
                    stop,
                )
            }
            // docker-compose.yml's cluster: Docker pause/kill/network disconnect and Toxiproxy.
            None if env.compose => {
                let server = lockbench_compose::ComposeNemesis::new(
                    lockbench_chaos::group_of(kind),
                    scenario.seed,
                );
                spawn_schedule(
                    Composite {
                        client,
                        server,
                        links: None,
                    },
                    steps,
                    clock,
                    measure_start,
                    events,
                    stop,
                )
            }
            // An external cluster: only what needs no access to its machines.
            None => {
                let server = StandInServerNemesis::new(kind, None, scenario.seed);
                spawn_schedule(
                    Composite {
                        client,
                        server,
                        links: None,
                    },
                    steps,
                    clock,
                    measure_start,
                    events,
                    stop,
                )
            }
        }
    });
    drop(events_tx);

    // Wait for the end, then collect.
    let local_output = match local {
        Some(task) => Some(task.await.context("in-process clients panicked")??),
        None => {
            let mut rx = control.stop.subscribe();
            let _ = rx.wait_for(|s| *s).await;
            None
        }
    };
    control.stop.send_replace(true);
    let holder_pauses = match pauses {
        Some(p) => p.await.unwrap_or(0),
        None => 0,
    };
    if let Some(n) = nemesis_task {
        let _ = n.await;
    }
    let mut stats = Vec::new();
    let mut worker_errors = Vec::new();
    let restarted = std::mem::take(&mut *respawned.lock().expect("respawned workers"));
    for worker in workers.into_iter().chain(restarted) {
        let name = worker.name.clone();
        match worker.finish(FINISH_BUDGET).await {
            Ok(s) => stats.extend(s),
            Err(e) => worker_errors.push(format!("{name}: {e}")),
        }
    }
    timer.abort();
    // The stop flag is set by now, so the counter has returned or returns at once.
    let count_reached = match counter {
        Some(c) => c.await.unwrap_or(false),
        None => false,
    };
    drop(service);
    let ops = writer.await??;
    let faults = event_log.await?;
    let mut window = local_output.unwrap_or_else(|| lockbench_workloads::RunOutput {
        workers: Vec::new(),
        measure_start,
        measure_end: clock.now().min(measure_end).max(measure_start),
        interrupted: clock.now() < measure_end,
    });
    if count_reached {
        window.interrupted = false;
    }
    if !worker_errors.is_empty() {
        eprintln!(
            "lockbench: {name}: worker problems: {}",
            worker_errors.join("; ")
        );
    }
    let mut parts = window.workers.clone();
    parts.extend(stats);
    let output = merge_outputs(parts, &window);

    let after = backend.server_counters().await;
    let fanout = match wakeups_before {
        Some(wakeups_before) => {
            let server_mid_run = match mid_run {
                Some(task) if task.is_finished() => task.await.ok(),
                Some(task) => {
                    task.abort();
                    None
                }
                None => None,
            };
            Some(build::FanoutReadings {
                before: wakeups_before,
                after: backend.wakeups().unwrap_or(wakeups_before),
                server_before: fanout_before,
                server_after: backend.server_fanout().await,
                server_mid_run,
            })
        }
        None => None,
    };
    let history = History::with_faults(ops, faults);
    let counters = CounterReadings { before, after };
    let (mut result, handoffs) = build::backend_result(Measured {
        info: &info,
        workload: w,
        output: &output,
        history: &history,
        counters: &counters,
        stall_alarm: scenario.stall_alarm,
    });
    if let Some(readings) = &fanout {
        result.fanout = Some(build::fanout(readings, &history));
    }
    result.resources = Some(
        sampler
            .finish(window.measure_start, window.measure_end)
            .await,
    );
    if fencing {
        result.fencing = Some(FencingRun {
            pause_ms: holder_pause.as_secs_f64() * 1e3,
            holder_pauses,
            resource: format!("{:?}", scenario.resource).to_lowercase(),
        });
    }
    run_dir.write_histogram(name, "acquire", &output.acquire_latency())?;
    run_dir.write_histogram(name, "acquire-service", &output.acquire_service())?;
    run_dir.write_histogram(name, "handoff", &handoffs)?;
    Ok(result)
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
                    "SIGSTOP pid {} right after its grant of {} (client {}, token {token}), before its write, for {}",
                    holder.pid,
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
                "SIGCONT pid {}; it now writes with token {token}",
                holder.pid
            ),
            resumed.is_ok(),
        ));
        holder.send(ToWorker::Write);
    }
    // Never leave the holder stopped.
    let _ = holder.signal(Signal::SIGCONT);
    pauses
}

/// Applies the schedule's steps at their times, then heals everything.
/// Runs the fault schedule with `nemesis` in its own task.
fn spawn_schedule<N: Nemesis + 'static>(
    nemesis: N,
    steps: Vec<schedule::Step>,
    clock: RunClock,
    measure_start: Nanos,
    events: mpsc::UnboundedSender<FaultEvent>,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run_schedule(
        nemesis,
        steps,
        clock,
        measure_start,
        events,
        stop,
    ))
}

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

/// Prints a fault event as it happens (a fault that could not be applied, loudly).
pub(crate) fn announce_fault(name: &str, e: &FaultEvent) {
    if e.applied {
        eprintln!(
            "lockbench: {name}: {} {:?} {} ({})",
            e.fault,
            e.phase,
            e.targets.join(","),
            e.note
        );
    } else {
        eprintln!(
            "lockbench: {name}: NOT APPLIED: {} {} ({})",
            e.fault,
            e.targets.join(","),
            e.note
        );
    }
}
