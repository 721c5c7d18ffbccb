//! Which processes a run's resource sampler watches: lockbench itself (always, with its worker
//! processes) and, on the managed cluster, the servers of the backend under test, found by pid
//! from the cluster's state directory. An external or compose cluster's servers are on other
//! machines (or in containers): only lockbench is sampled there, and the results say so by
//! having no `server` entries.

use crate::placement::RunEnv;
use lockbench_capacity::{Sampler, Watched, sampler};
use lockbench_core::{BackendKind, RunClock};
use std::time::Duration;

/// Starts sampling for a run of `kind` whose measured window is `measured` long. Every managed
/// server, of any group, is left out of lockbench's own share: a run that started the cluster
/// is their parent.
pub fn start(kind: BackendKind, env: &RunEnv, clock: RunClock, measured: Duration) -> Sampler {
    let (mut servers, mut others) = (Vec::new(), Vec::new());
    if let Some(dir) = env.managed_state() {
        let cluster = lockbench_cluster::Cluster::new(dir);
        let group = lockbench_registry::group_of(kind);
        for s in cluster.servers() {
            let Some(pid) = cluster.server_pid(s.name) else {
                continue;
            };
            if s.group == group {
                servers.push(Watched {
                    name: s.name.to_string(),
                    pid,
                });
            } else {
                others.push(pid);
            }
        }
    }
    // The lag probe shares the first client thread with its client loops.
    let lag_on = &lockbench_workloads::threads::client_threads()[0];
    Sampler::start_excluding(
        servers,
        others,
        sampler::interval_for(measured),
        clock,
        lag_on,
    )
}
