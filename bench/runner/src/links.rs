//! Link proxies for one backend's run: started when the fault schedule has link faults
//! (`link-delay`, `link-blackhole`) on the managed or the compose cluster, so every client (the in-process
//! slots as `coordinator`, each worker process as `client<N>`) reaches the backend's servers
//! through its own in-process proxy ([`lockbench_chaos::LinkProxies`]) and the link nemesis can
//! slow or cut exactly the links a fault names. Runs without link faults connect directly, as
//! before: the proxy is a hop (one more copy per message) that a benchmark must not pay for
//! nothing.

use crate::observer::Observer;
use crate::placement::RunEnv;
use lockbench_chaos::LinkProxies;
use lockbench_core::{BackendKind, Fault, PartitionSpec, Route, Scenario, Targets};

/// `true` when the schedule has a link fault (one whose kind routes to the proxies).
pub fn has_link_faults(scenario: &Scenario) -> bool {
    scenario
        .faults
        .iter()
        .any(|f| f.fault.route() == Route::Proxies)
}

/// The run's proxies to `kind`'s servers, or `None` when the run needs none (no link fault,
/// or an external cluster, whose link faults are reported as not applied). On compose they
/// run here too, in front of the containers: the same proxy at the same place as in managed
/// mode, so link faults cost the same in both.
pub fn proxies_for(
    kind: BackendKind,
    scenario: &Scenario,
    env: &RunEnv,
    observer: &dyn Observer,
) -> Option<LinkProxies> {
    if !has_link_faults(scenario) {
        return None;
    }
    let servers = env.cluster.proxied_servers(kind)?;
    let isolates_clients = scenario.faults.iter().any(|f| {
        matches!(
            &f.fault,
            Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Holder | Targets::Nodes(_))
                    | PartitionSpec::ClientsOff
                    | PartitionSpec::Cut(_)
            }
        )
    });
    if isolates_clients {
        observer.warning(
            "this schedule has link faults, so every client reaches the servers through a \
             proxy in the coordinator: a partition of a client host does not cut that \
             client's server links in this run",
        );
    }
    Some(LinkProxies::new(env.bind, servers))
}
