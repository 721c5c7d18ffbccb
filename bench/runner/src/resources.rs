//! Which processes a run's resource sampler watches: lockbench itself (always, with its worker
//! processes) and, on the managed cluster, the servers of the backend under test, found by pid
//! from the cluster's state directory. An external or compose cluster's servers are on other
//! machines (or in containers): only lockbench is sampled there, and the results say so by
//! having no `server` entries.

use crate::placement::RunEnv;
use lockbench_capacity::{Sampler, Watched, sampler};
use lockbench_core::{BackendKind, RunClock};
use std::time::Duration;

/// Starts sampling for a run of `kind` whose measured window is `measured` long.
pub fn start(kind: BackendKind, env: &RunEnv, clock: RunClock, measured: Duration) -> Sampler {
    let servers = match env.managed_state() {
        Some(dir) => {
            let cluster = lockbench_cluster::Cluster::new(dir);
            let group = lockbench_chaos::group_of(kind);
            cluster
                .servers()
                .into_iter()
                .filter(|s| s.group == group)
                .filter_map(|s| {
                    cluster.server_pid(s.name).map(|pid| Watched {
                        name: s.name.to_string(),
                        pid,
                    })
                })
                .collect()
        }
        None => Vec::new(),
    };
    Sampler::start(servers, sampler::interval_for(measured), clock)
}
