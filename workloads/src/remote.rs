//! The coordinator's handle on a worker that dialled in ([`crate::dial`]): the same
//! conversation as a worker process's ([`crate::link`]), over its TCP connection. There is no
//! process to signal: the worker ends when told to stop, when the connection closes, or when it
//! hears nothing (no probe) for its idle limit. When its launcher knows its process (a child
//! of the coordinator, a Swarm task's container), [`RemoteWorker::set_process`] says which, and
//! faults signal it there as they would a worker process ([`RemoteWorker::handle`]).

use crate::dial::Arrival;
use crate::link::Link;
pub use crate::link::WorkerClock;
use crate::recorder::WorkerStats;
use crate::worker::{Job, ToWorker, WorkerHandle, WorkerSinks};
use nix::unistd::Pid;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A worker that dialled in and was given its job.
#[derive(Debug)]
pub struct RemoteWorker {
    /// The name it gave.
    pub name: String,
    /// Where it connected from.
    pub peer: SocketAddr,
    /// The slots it runs.
    pub slots: Vec<u32>,
    link: Link,
    handle: Option<WorkerHandle>,
}

impl RemoteWorker {
    /// Gives `arrival` its `job` and starts reading its messages into `sinks`, its ops'
    /// times as they come when `clock` is [`WorkerClock::Shared`], else mapped onto the
    /// coordinator's clock.
    pub async fn start(
        arrival: Arrival,
        job: &Job,
        sinks: WorkerSinks,
        clock: WorkerClock,
    ) -> io::Result<RemoteWorker> {
        let link = Link::start(arrival.input, arrival.output, job, sinks, clock).await?;
        Ok(RemoteWorker {
            name: arrival.name,
            peer: arrival.peer,
            slots: job.slots.clone(),
            link,
            handle: None,
        })
    }

    /// Its process, as its launcher knows it: `pid` in this machine's pid namespace, in
    /// `container` (signalled through `docker kill` when `via_docker`).
    pub fn set_process(&mut self, pid: Pid, container: Option<String>, via_docker: bool) {
        self.handle = Some(WorkerHandle::new(
            self.name.clone(),
            self.slots.clone(),
            (pid, container, via_docker),
            self.link.commands.clone(),
        ));
    }

    /// A handle for signals and commands; `None` until [`RemoteWorker::set_process`] (a
    /// worker whose process nobody here knows cannot be signalled).
    pub fn handle(&self) -> Option<WorkerHandle> {
        self.handle.clone()
    }

    /// Waits until every client of the worker is connected.
    pub async fn ready(&mut self) -> Result<(), String> {
        self.link.ready(&self.name).await
    }

    /// Sends a command.
    pub fn send(&self, msg: ToWorker) {
        let _ = self.link.commands.send(msg);
    }

    /// Tells the worker to stop and waits up to `budget` for its stats; the connection closes.
    pub async fn finish(mut self, budget: Duration) -> Result<Vec<WorkerStats>, String> {
        self.link.finish(&self.name, budget).await
    }

    /// Its clock probes and bounds, readable after [`RemoteWorker::finish`].
    pub fn clock_tap(&self) -> crate::link::ClockTap {
        self.link.tap()
    }

    /// The clock probes answered so far ([`crate::clock`]).
    pub fn clock_samples(&self) -> Vec<crate::clock::ProbeSample> {
        self.link.samples()
    }

    /// Per slot, the largest uncertainty (half-width, ns) of its ops' mapped times; empty on
    /// the coordinator's clock.
    pub fn clock_bounds(&self) -> std::collections::BTreeMap<u32, u64> {
        self.link.bounds()
    }
}
