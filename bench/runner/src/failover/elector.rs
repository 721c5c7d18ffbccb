//! Picks the election recipe once, at the top, for the coordinator and for a candidate worker
//! process alike (as `dispatch.rs` does for lock backends).

use lockbench_core::{ElectionKind, Endpoints, Scenario};
use lockbench_workloads::candidate::{self, CandidateJob};

/// Binds `$e` to the elector of `$kind` and evaluates `$body`, generic over its type.
macro_rules! with_elector {
    ($kind:expr, $scenario:expr, $endpoints:expr, $name:expr, |$e:ident| $body:expr) => {{
        let scenario: &Scenario = $scenario;
        let endpoints: &Endpoints = $endpoints;
        let name: &str = $name;
        match $kind {
            ElectionKind::ZkElection => {
                let $e =
                    lockbench_zookeeper::ZkElection::new(endpoints, &scenario.zookeeper, name)?;
                $body
            }
            ElectionKind::EtcdElection => {
                let $e = lockbench_etcd::EtcdElection::new(endpoints, &scenario.etcd, name)?;
                $body
            }
            ElectionKind::EtcdLeaseElection => {
                let $e = lockbench_etcd::EtcdLeaseElection::new(endpoints, &scenario.etcd, name)?;
                $body
            }
            ElectionKind::RedisLeaseElection => {
                let $e = lockbench_redis::RedisLeaseElection::new(
                    endpoints,
                    &scenario.redis,
                    scenario.failover.poll,
                    name,
                )?;
                $body
            }
        }
    }};
}

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
