//! Picks the election recipe once, at the top, for the coordinator and for a candidate worker
//! process alike (as `dispatch.rs` does for lock backends), with the
//! registry's constructor table (`lockbench_registry::with_elector!`).

use lockbench_registry::with_elector;
use lockbench_workloads::candidate::{self, CandidateJob};

/// The worker side: serves one candidate job on stdin/stdout.
pub async fn run_candidate(
    job: CandidateJob,
    stdin: tokio::io::BufReader<tokio::io::Stdin>,
) -> anyhow::Result<()> {
    let (scenario, endpoints, name) = (
        job.scenario.clone(),
        job.endpoints.clone(),
        job.name.clone(),
    );
    with_elector!(job.election, &scenario, &endpoints, &name, |e| {
        candidate::serve(e, job, stdin, tokio::io::stdout()).await?;
        Ok(())
    })
}
