//! `lockbench worker`: runs client slots for a coordinator.
//!
//! Without `--coordinator` (what `lockbench run` starts; users never run it): JSON lines on
//! stdin/stdout (see `lockbench_workloads::worker`), serving client slots or one
//! leader-election candidate of the failover workload (`lockbench_workloads::candidate`),
//! whichever job its first line holds.
//!
//! With `--coordinator ADDR`: dials in to the run's coordinator over TCP
//! (`lockbench_workloads::dial`), proves it knows the run's secret from
//! `LOCKBENCH_WORKER_SECRET`, and serves the client-slot job it is handed on that connection,
//! until the coordinator says stop, closes the connection, or stays silent for `--idle`.

use crate::cli::WorkerArgs;
use lockbench_workloads::clock::TestSkew;
use lockbench_workloads::dial::{self, RunSecret};
use std::process::ExitCode;
use tokio::io::AsyncBufReadExt;

/// Serves one job, from stdin or from a coordinator it dials.
pub async fn run(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    if let Some(addr) = args.coordinator {
        let secret = RunSecret::from_env().map_err(anyhow::Error::msg)?;
        let skew = TestSkew::from_env().map_err(anyhow::Error::msg)?;
        let name = args.name.unwrap_or_else(default_name);
        let (input, output) = dial::dial(&addr, &name, &secret, args.patience).await?;
        tracing::info!(coordinator = %addr, worker = %name, "dialled in");
        lockbench_runner::dispatch::run_dialled_worker(input, output, args.idle, skew).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut first = String::new();
    stdin.read_line(&mut first).await?;
    if let Some(job) = lockbench_workloads::candidate::parse_job(&first) {
        lockbench_failover::run_candidate(job, stdin).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let job = lockbench_workloads::worker::read_job(&mut first.as_bytes()).await?;
    lockbench_runner::dispatch::run_worker(job, stdin).await?;
    Ok(ExitCode::SUCCESS)
}

/// `worker-<hostname>-<pid>`: unique enough to tell workers apart in the coordinator's log.
fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!("worker-{host}-{}", std::process::id())
}
