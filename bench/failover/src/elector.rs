//! The candidate worker process's side of the failover workload: builds the election recipe
//! the job names with the registry's constructor (`lockbench_registry::elector`), as the
//! coordinator does, and serves the job with it.

use lockbench_workloads::candidate::{self, CandidateJob};

/// The worker side: serves one candidate job on stdin/stdout.
pub async fn run_candidate(
    job: CandidateJob,
    stdin: tokio::io::BufReader<tokio::io::Stdin>,
) -> anyhow::Result<()> {
    let elector =
        lockbench_registry::elector(job.election, &job.scenario, &job.endpoints, &job.name)?;
    candidate::serve(elector, job, stdin, tokio::io::stdout()).await?;
    Ok(())
}
