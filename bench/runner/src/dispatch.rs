//! Builds the backend once, at the top (the registered recipe's constructor, as an
//! `AnyBackend`), and runs everything below over it. The same choice is made in the
//! coordinator ([`run_backend`]) and in a worker process ([`run_worker`]), from the same
//! scenario knobs, so both build identical clients.

use crate::coordinator;
use crate::observer::Observer;
use crate::placement::RunEnv;
use lockbench_core::{BackendKind, Endpoints, Scenario};
use lockbench_report::RunDir;
use lockbench_results::BackendResult;
use lockbench_workloads::RunControl;
use lockbench_workloads::worker::{self, Job};
use std::sync::Arc;

/// Runs `scenario`'s workload against one backend and returns its result. Errors (bad
/// endpoints, unreachable servers) come back before any load is applied.
pub async fn run_backend(
    kind: BackendKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    run_dir: &RunDir,
    control: RunControl,
    env: &RunEnv,
    observer: &Arc<dyn Observer>,
) -> anyhow::Result<BackendResult> {
    // With link faults, the in-process clients connect through their proxies.
    let mut links = crate::links::proxies_for(kind, scenario, env, observer.as_ref());
    let local_endpoints = match links.as_mut() {
        Some(p) => {
            p.endpoints_for(lockbench_chaos::grudge::COORDINATOR, endpoints)
                .await?
        }
        None => endpoints.clone(),
    };
    let b = lockbench_registry::backend(kind, scenario, &local_endpoints)?;
    coordinator::execute(
        b, scenario, endpoints, run_dir, control, env, links, observer,
    )
    .await
}

/// The worker side: builds the job's backend and serves the job on stdin (after the job line)
/// and stdout.
pub async fn run_worker(
    job: Job,
    stdin: tokio::io::BufReader<tokio::io::Stdin>,
) -> anyhow::Result<()> {
    serve_job(job, stdin, tokio::io::stdout(), worker::Serving::default()).await
}

/// The worker side of a worker that dialled in ([`lockbench_workloads::dial`]): reads the job
/// from the connection, builds its backend and serves it there, until the coordinator says stop,
/// closes the connection, or stays silent for `idle`.
pub async fn run_dialled_worker(
    mut input: tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>,
    output: tokio::net::tcp::OwnedWriteHalf,
    idle: std::time::Duration,
    skew: Option<lockbench_workloads::clock::TestSkew>,
) -> anyhow::Result<()> {
    let mut job = match tokio::time::timeout(idle, worker::read_job(&mut input)).await {
        Ok(Ok(job)) => job,
        Ok(Err(e)) => anyhow::bail!(
            "the coordinator sent no job (it went away, or is not a lockbench run): {e}"
        ),
        Err(_) => anyhow::bail!("the coordinator sent no job within {idle:?}"),
    };
    job.rebase_clock();
    if job.resource.ip().is_unspecified() {
        // The service listens on every address of the coordinator's host: write to the one
        // this worker reached the coordinator at.
        job.resource.set_ip(input.get_ref().peer_addr()?.ip());
    }
    let serving = worker::Serving {
        idle: Some(idle),
        skew,
    };
    serve_job(job, input, output, serving).await
}

async fn serve_job(
    job: Job,
    input: impl tokio::io::AsyncBufRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    serving: worker::Serving,
) -> anyhow::Result<()> {
    let (kind, scenario, endpoints) = (job.backend, job.scenario.clone(), job.endpoints.clone());
    let b = lockbench_registry::backend(kind, &scenario, &endpoints)?;
    worker::serve(b, job, input, output, serving).await?;
    Ok(())
}

/// The scale benchmark's side: builds `kind`'s backend from `scenario`'s knobs and runs the
/// steps against it ([`lockbench_workloads::scale::measure`]).
pub async fn run_scale(
    kind: BackendKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    steps: &[u32],
    probes: u32,
    waiting: bool,
    server_rss: lockbench_workloads::scale::RssReader<'_>,
) -> anyhow::Result<lockbench_workloads::scale::BackendScale> {
    let b = lockbench_registry::backend(kind, scenario, endpoints)?;
    Ok(lockbench_workloads::scale::measure(b, steps, probes, waiting, server_rss).await)
}
