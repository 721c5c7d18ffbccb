//! The client nemesis's side of restarting a killed worker: the chaos crate kills a client
//! worker and asks for a fresh one through a [`lockbench_chaos::Respawn`], which a
//! [`Respawner`] (lockbench-launch) serves ([`into_respawn`]); the nemesis sees workers only as
//! [`ClientProcess`]es ([`client_process`]).

use lockbench_chaos::ClientProcess;
use lockbench_launch::Respawner;
use lockbench_workloads::worker::WorkerHandle;
use std::sync::Arc;

/// `respawner` as the client nemesis takes it.
pub fn into_respawn(respawner: Respawner) -> lockbench_chaos::Respawn {
    let this = Arc::new(respawner);
    Box::new(move |slot| {
        let this = this.clone();
        Box::pin(async move { this.respawn(slot).await.map(|h| client_process(&h)) })
    })
}

/// A worker as faults see it: name, slots, pid, container.
pub fn client_process(w: &WorkerHandle) -> ClientProcess {
    ClientProcess {
        name: w.name.clone(),
        slots: w.slots.clone(),
        pid: w.pid,
        container: w.container.clone(),
        via_docker: w.via_docker,
    }
}
