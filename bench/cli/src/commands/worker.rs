//! `lockbench worker` (hidden): runs client slots for a coordinator, speaking JSON lines on
//! stdin/stdout (see `lockbench_workloads::worker`), or one leader-election candidate of the
//! failover workload (`lockbench_workloads::candidate`), whichever job its first line holds.
//! Users never run it; `lockbench run` does.

use std::process::ExitCode;
use tokio::io::AsyncBufReadExt;

/// Reads the job from stdin and serves it until the coordinator says stop or goes away.
pub async fn run() -> anyhow::Result<ExitCode> {
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut first = String::new();
    stdin.read_line(&mut first).await?;
    if let Some(job) = lockbench_workloads::candidate::parse_job(&first) {
        lockbench_runner::failover::run_candidate(job, stdin).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let job = lockbench_workloads::worker::read_job(&mut first.as_bytes()).await?;
    lockbench_runner::dispatch::run_worker(job, stdin).await?;
    Ok(ExitCode::SUCCESS)
}
