//! Picks the backend once, at the top, and runs everything below generically over it: the
//! client loop is monomorphised per recipe, so no op pays for dynamic dispatch.

use lockbench_core::{Backend, BackendKind, Endpoints, History, RunClock, Scenario};
use lockbench_report::build::{self, CounterReadings, Measured};
use lockbench_report::{BackendResult, RunDir};
use lockbench_workloads::{ContentionRun, FencedResource, RunControl, run_contention};
use std::sync::Arc;

/// Runs `scenario`'s workload against one backend and returns its result. Errors (bad
/// endpoints, unreachable servers) come back before any load is applied.
pub async fn run_backend(
    kind: BackendKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    control: RunControl,
) -> anyhow::Result<BackendResult> {
    let keys = scenario.workload.keys;
    let seed = scenario.seed;
    match kind {
        BackendKind::ZkFair => {
            let b = lockbench_zookeeper::ZkFair::new(endpoints, &scenario.zookeeper, keys, seed)?;
            execute(b, scenario, run_dir, control).await
        }
        BackendKind::ZkCurator => {
            let b =
                lockbench_zookeeper::ZkCurator::new(endpoints, &scenario.zookeeper, keys, seed)?;
            execute(b, scenario, run_dir, control).await
        }
        BackendKind::EtcdLease | BackendKind::EtcdLockapi => {
            let b = lockbench_etcd::EtcdBackend::new(kind, endpoints, &scenario.etcd, keys, seed)?;
            execute(b, scenario, run_dir, control).await
        }
        BackendKind::RedisSetnx | BackendKind::RedisBrokenNoNx => {
            let mode = if kind == BackendKind::RedisSetnx {
                lockbench_redis::SetMode::Nx
            } else {
                lockbench_redis::SetMode::BrokenNoNx
            };
            let b =
                lockbench_redis::SetNxBackend::new(endpoints, &scenario.redis, keys, seed, mode)?;
            execute(b, scenario, run_dir, control).await
        }
        BackendKind::Redlock => {
            let b = lockbench_redis::RedlockBackend::new(endpoints, &scenario.redlock, keys, seed)?;
            execute(b, scenario, run_dir, control).await
        }
    }
}

async fn execute<B: Backend>(
    backend: B,
    scenario: &Scenario,
    run_dir: &RunDir,
    control: RunControl,
) -> anyhow::Result<BackendResult> {
    let info = backend.info();
    let backend = Arc::new(backend);
    let before = backend.server_counters().await;
    let (history_tx, writer) = run_dir.history_writer(info.backend.name())?;
    let run = ContentionRun {
        workload: scenario.workload.clone(),
        seed: scenario.seed,
        warmup: scenario.warmup,
        duration: scenario.duration,
        clock: RunClock::start(),
        resource: Arc::new(FencedResource::new(
            scenario.resource,
            scenario.workload.keys,
        )),
        history: history_tx,
    };
    let output = run_contention(backend.clone(), run, control).await;
    let ops = writer.await??;
    let output = output?;
    let after = backend.server_counters().await;
    let history = History::from_unordered(ops);
    let counters = CounterReadings { before, after };
    let (result, handoffs) = build::backend_result(Measured {
        info: &info,
        workload: &scenario.workload,
        output: &output,
        history: &history,
        counters: &counters,
    });
    let name = info.backend.name();
    run_dir.write_histogram(name, "acquire", &output.acquire_latency())?;
    run_dir.write_histogram(name, "acquire-service", &output.acquire_service())?;
    run_dir.write_histogram(name, "handoff", &handoffs)?;
    Ok(result)
}
