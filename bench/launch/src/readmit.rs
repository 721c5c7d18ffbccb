//! Restarting a killed worker that dialled in (`[workers] launcher = "dial" | "swarm"`), as a
//! killed worker process is restarted ([`crate::Respawner`]): a crash that a supervisor would
//! answer with a fresh worker, so the run keeps the slot and later faults find a process.
//!
//! Why this shape: the launcher starts the successor (a child process again; for a Swarm task,
//! a standalone container in its place, since Swarm cannot start one task again under its
//! slot) and knows where its process is; the coordinator's listener, kept open for the run
//! with the run's secret, admits it like the first one. A successor under a name already
//! admitted replaces the dead one: it gets the dead one's job (its slots) and the run's
//! original start time, so its warm-up and measured window are everyone's, and a fresh
//! connection, so its clock probes start again (its own entry in the `clocks` section: a new
//! process is a new clock). Arrivals under another name are turned away, as at the start.

use crate::dialled::index_of;
use crate::respawn::ready_after_restart;
use crate::run_worker::RunWorker;
use crate::{Launched, worker_name};
use lockbench_core::Nanos;
use lockbench_workloads::clock::DRIFT_ALLOWANCE_PPM;
use lockbench_workloads::dial::Listener;
use lockbench_workloads::remote::{RemoteWorker, WorkerClock};
use lockbench_workloads::worker::{Job, ToWorker, WorkerHandle, WorkerSinks};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// What restarts a killed worker that dialled in.
pub struct Readmit {
    /// What started the workers (finished at the end of the run).
    pub(crate) launched: Arc<Launched>,
    /// The run's listener, still open: successors dial in to it.
    pub(crate) listener: tokio::sync::Mutex<Listener>,
    /// Each worker's job, by worker index.
    pub(crate) jobs: BTreeMap<u32, Job>,
    /// Where worker messages go.
    pub(crate) sinks: WorkerSinks,
}

impl Readmit {
    /// The worker index running client slot `slot`.
    fn index_of_slot(&self, slot: u32) -> Option<u32> {
        self.jobs
            .iter()
            .find(|(_, j)| j.slots.contains(&slot))
            .map(|(&i, _)| i)
    }

    /// Starts a successor for the killed worker running `slot`, admits it, gives it the dead
    /// one's job, waits until its clients are connected and starts it at `start`. Returns it
    /// and its handle (for signals).
    pub async fn restart(
        &self,
        slot: u32,
        start: Nanos,
    ) -> Result<(RunWorker, WorkerHandle), String> {
        let index = self
            .index_of_slot(slot)
            .ok_or_else(|| format!("no worker of this run runs client slot {slot}"))?;
        let name = worker_name(index);
        let started = self
            .launched
            .restart(index)
            .await
            .map_err(|e| format!("{e:#}"))?;
        tracing::info!(worker = %name, "restarted as {started}");
        let arrival = self.arrival(index).await?;
        let job = self.jobs.get(&index).expect("found above");
        let mut worker = RemoteWorker::start(
            arrival,
            job,
            self.sinks.clone(),
            WorkerClock::Own {
                drift_ppm: DRIFT_ALLOWANCE_PPM,
            },
        )
        .await
        .map_err(|e| format!("cannot send restarted {name} its job: {e}"))?;
        let process = self
            .launched
            .process(index)
            .await
            .map_err(|e| format!("restarted {name}: {e:#}"))?;
        let Some((pid, container, via_docker)) = process else {
            return Err(format!("restarted {name}: its process is unknown here"));
        };
        worker.set_process(pid, container, via_docker);
        ready_after_restart(&name, worker.ready()).await?;
        worker.send(ToWorker::Start { at: start });
        let handle = worker.handle().expect("its process was set");
        Ok((
            RunWorker::Remote(Box::new(worker), Some(handle.clone())),
            handle,
        ))
    }

    /// Waits for worker `index`'s successor to dial in (the launcher's arrival budget);
    /// anyone else is turned away.
    async fn arrival(&self, index: u32) -> Result<lockbench_workloads::dial::Arrival, String> {
        let name = worker_name(index);
        let budget = self.launched.arrival_budget();
        let deadline = Instant::now() + budget;
        let count = self.jobs.len() as u32;
        let mut listener = self.listener.lock().await;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "restarted {name} did not dial in within {budget:?}; {}",
                    self.launched.diagnose().await
                ));
            }
            match listener.next(left).await {
                Ok(a) if index_of(&a.name, count) == Some(index) => return Ok(a),
                Ok(a) => tracing::warn!(
                    worker = %a.name, peer = %a.peer,
                    "dialled in while {name} was awaited after its restart: turned away"
                ),
                Err(e) if e.contains("stopped") => return Err(e),
                Err(_) => {}
            }
        }
    }

    /// The network namespaces of workers that have one of their own, as client hosts a
    /// partition can cut ([`Launched::client_hosts`]).
    pub fn client_hosts(&self) -> Vec<lockbench_cluster::Host> {
        self.launched.client_hosts()
    }

    /// Stops and removes what the launcher started, successors included.
    pub async fn finish(&self) {
        self.launched.finish().await;
    }
}
