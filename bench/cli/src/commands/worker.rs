//! `lockbench worker` (hidden): runs client slots for a coordinator, speaking JSON lines on
//! stdin/stdout (see `lockbench_workloads::worker`). Users never run it; `lockbench run` does.

use std::process::ExitCode;

/// Reads the job from stdin and serves it until the coordinator says stop or goes away.
pub async fn run() -> anyhow::Result<ExitCode> {
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let job = lockbench_workloads::worker::read_job(&mut stdin).await?;
    crate::dispatch::run_worker(job, stdin).await?;
    Ok(ExitCode::SUCCESS)
}
