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
//! such in the note). The runner hands this to the chaos crate's client nemesis, which does
//! the kill.

use crate::{Readmit, RunWorker, WorkerCommands, worker_name};
use lockbench_core::Nanos;
use lockbench_workloads::WorkerProcess;
use lockbench_workloads::worker::{Job, ToWorker, WorkerHandle, WorkerSinks};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    pub started: Arc<Mutex<Vec<RunWorker>>>,
    /// Workers that dialled in: restarted through their launcher (`None`: worker processes).
    pub dialled: Option<Arc<Readmit>>,
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
        ready_after_restart(&name, worker.ready()).await?;
        worker.send(ToWorker::Start { at: self.start });
        let handle = worker.handle();
        self.started
            .lock()
            .expect("respawned list")
            .push(RunWorker::Process(Box::new(worker)));
        Ok(handle)
    }
}

/// How long a restarted worker gets to connect its clients (once it dialled in, for one that
/// dials in).
const READY_BUDGET: Duration = Duration::from_secs(30);

/// Waits for restarted worker `name` to report `ready` within [`READY_BUDGET`].
pub(crate) async fn ready_after_restart(
    name: &str,
    ready: impl Future<Output = Result<(), String>>,
) -> Result<(), String> {
    match tokio::time::timeout(READY_BUDGET, ready).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("restarted {name} failed: {e}")),
        Err(_) => Err(format!(
            "restarted {name} not ready within {READY_BUDGET:?}"
        )),
    }
}
