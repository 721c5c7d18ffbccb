//! One worker of a run as the coordinator drives it, whoever started it: a worker process
//! over pipes ([`WorkerProcess`]) or a worker that dialled in ([`RemoteWorker`]). The run's
//! phases (start barrier, window, fault loop, collection) see only this.

use lockbench_workloads::WorkerProcess;
use lockbench_workloads::link::ClockTap;
use lockbench_workloads::recorder::WorkerStats;
use lockbench_workloads::remote::RemoteWorker;
use lockbench_workloads::worker::{ToWorker, WorkerHandle};
use std::time::Duration;

/// A worker of the run.
pub enum RunWorker {
    /// A child process over pipes, on the coordinator's clock.
    Process(Box<WorkerProcess>),
    /// A worker that dialled in, on its own clock, with its process when its launcher knows
    /// it (`None`: started by someone else, it cannot be signalled).
    Remote(Box<RemoteWorker>, Option<WorkerHandle>),
}

impl RunWorker {
    /// Its name (`client<K>`).
    pub fn name(&self) -> &str {
        match self {
            RunWorker::Process(w) => &w.name,
            RunWorker::Remote(w, _) => &w.name,
        }
    }

    /// Waits until its clients are connected.
    pub async fn ready(&mut self) -> Result<(), String> {
        match self {
            RunWorker::Process(w) => w.ready().await,
            RunWorker::Remote(w, _) => w.ready().await,
        }
    }

    /// Sends it a message.
    pub fn send(&self, msg: ToWorker) {
        match self {
            RunWorker::Process(w) => w.send(msg),
            RunWorker::Remote(w, _) => w.send(msg),
        }
    }

    /// A handle for signals and commands; `None` for a worker whose process nobody here
    /// knows.
    pub fn handle(&self) -> Option<WorkerHandle> {
        match self {
            RunWorker::Process(w) => Some(w.handle()),
            RunWorker::Remote(_, h) => h.clone(),
        }
    }

    /// Its clock probes, for a worker on its own clock.
    pub fn clock(&self) -> Option<(String, Vec<u32>, ClockTap)> {
        match self {
            RunWorker::Process(_) => None,
            RunWorker::Remote(w, _) => Some((w.name.clone(), w.slots.clone(), w.clock_tap())),
        }
    }

    /// Stops it and collects its stats (a stopped process is resumed first).
    pub async fn finish(self, budget: Duration) -> Result<Vec<WorkerStats>, String> {
        match self {
            RunWorker::Process(w) => w.finish(budget).await,
            RunWorker::Remote(w, h) => {
                if let Some(h) = h {
                    let _ = h.signal(nix::sys::signal::Signal::SIGCONT);
                }
                w.finish(budget).await
            }
        }
    }
}
