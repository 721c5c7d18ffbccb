//! Restarting a killed client worker: a `kill` of a client process (`targets = "holder"`,
//! `client2`) is a crash, and a supervised service would come back. Without a restart the run
//! would lose that slot for good, and later faults on it (a pause, another kill) would find
//! no process. So the client nemesis kills, then starts a *fresh* worker process for the same
//! slot, with the same job (endpoints, link proxies, resource service) and the run's original
//! start time, so its warm-up and measured window line up with everyone else's. Its clients
//! have new ids (the driver's replacement ids), so no history line of the dead process is
//! continued by the new one.
//!
//! A worker that dialled in (`[workers] launcher = "dial" | "swarm"`) is restarted by its
//! launcher and admitted again by the coordinator's listener ([`Readmit`]).
//!
//! The new worker goes into a shared list that the coordinator finishes (stop,
//! collect stats) at the end with the others; the dead process's stats are lost (counted as
//! such in the note). The chaos crate's client nemesis, which does the kill, gets this as a
//! [`lockbench_chaos::Respawn`] ([`Respawner::into_respawn`]) and sees workers only as
//! [`ClientProcess`]es ([`client_process`]).

use lockbench_chaos::ClientProcess;
use lockbench_core::Nanos;
use lockbench_launch::{Readmit, RunWorker, WorkerCommands, worker_name};
use lockbench_workloads::WorkerProcess;
use lockbench_workloads::worker::{Job, ToWorker, WorkerHandle, WorkerSinks};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a restarted worker gets to connect.
const READY_BUDGET: Duration = Duration::from_secs(30);

/// Starts replacement workers during the run.
pub struct Respawner {
    /// The worker command line per slot.
    pub commands: WorkerCommands,
    /// Each worker slot's job, as first sent.
    pub jobs: BTreeMap<u32, Job>,
    /// Where worker messages go.
    pub sinks: WorkerSinks,
    /// The run's common start time.
    pub start: Nanos,
    /// Replacement workers, finished by the coordinator at the end.
    pub(crate) started: Arc<Mutex<Vec<RunWorker>>>,
    /// Workers that dialled in: restarted through their launcher (`None`: worker processes).
    pub(crate) dialled: Option<Arc<Readmit>>,
}

impl Respawner {
    /// Starts a fresh worker for `slot`, waits until its clients are connected, and starts it
    /// on the run's clock. Returns its handle.
    pub async fn respawn(&self, slot: u32) -> Result<WorkerHandle, String> {
        if let Some(dialled) = &self.dialled {
            let (worker, handle) = dialled.restart(slot, self.start).await?;
            self.started.lock().expect("respawned list").push(worker);
            return Ok(handle);
        }
        let job = self
            .jobs
            .get(&slot)
            .ok_or_else(|| format!("slot {slot} has no worker process to restart"))?;
        let name = worker_name(slot);
        let cmd = self
            .commands
            .command(slot)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let mut worker = WorkerProcess::spawn(name.clone(), cmd, job, self.sinks.clone())
            .await
            .map_err(|e| format!("cannot restart {name}: {e}"))?;
        let pid = self
            .commands
            .pid(slot, worker.handle().pid)
            .await
            .map_err(|e| format!("restarted {name}: {e:#}"))?;
        worker.set_pid(
            pid,
            self.commands.container(slot),
            self.commands.via_docker(),
        );
        match tokio::time::timeout(READY_BUDGET, worker.ready()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("restarted {name} failed: {e}")),
            Err(_) => {
                return Err(format!(
                    "restarted {name} not ready within {READY_BUDGET:?}"
                ));
            }
        }
        worker.send(ToWorker::Start { at: self.start });
        let handle = worker.handle();
        self.started
            .lock()
            .expect("respawned list")
            .push(RunWorker::Process(Box::new(worker)));
        Ok(handle)
    }

    /// This respawner as the client nemesis takes it.
    pub fn into_respawn(self) -> lockbench_chaos::Respawn {
        let this = Arc::new(self);
        Box::new(move |slot| {
            let this = this.clone();
            Box::pin(async move { this.respawn(slot).await.map(|h| client_process(&h)) })
        })
    }
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
