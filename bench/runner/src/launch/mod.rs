//! Launchers for workers that dial in (`[workers] launcher = "dial" | "swarm"`).
//!
//! Why this shape: a launcher only *starts* workers and knows where their processes are. It
//! hands each one the coordinator's address, its name (`client<K>`, worker index K-1) and the
//! run's secret (in the environment or a mounted secret file, never on a command line), and
//! the coordinator then waits for them at its [`Listener`](lockbench_workloads::dial::Listener)
//! like for any worker on another host: the handshake, the job, the probes. What a launcher
//! adds is what the coordinator cannot learn from a TCP connection: which process or container
//! is which worker (so a client fault can pause or kill it), how to tell a user why a worker
//! did not come, and how to remove everything it started, at the end, on an error and on
//! Ctrl-C/SIGTERM (the run then ends normally and drops it; [`Launched`]'s `Drop` cleans up
//! what [`Launched::finish`] did not).

mod dial;
mod leftovers;
mod swarm;

use lockbench_core::workers::{Launcher, WorkersSpec};
use lockbench_workloads::dial::RunSecret;
use nix::unistd::Pid;
use std::net::SocketAddr;
use std::time::Duration;

/// Where a launched worker's process is: its pid on this machine, its container, and whether
/// signals go to it through `docker kill`.
pub(crate) type Process = (Pid, Option<String>, bool);

/// The workers a launcher started.
pub(crate) enum Launched {
    /// Child processes of this one.
    Dial(dial::Children),
    /// The tasks of a Docker Swarm service.
    Swarm(Box<swarm::Service>),
    /// Nothing: someone else starts the workers.
    External,
}

impl Launched {
    /// Starts `spec.count` workers that dial `coordinator` with `secret`; `bridged`: Swarm
    /// tasks get a bridge network of their own (the servers are on the managed cluster's
    /// bridge, routed to from it), host networking otherwise.
    pub(crate) async fn start(
        spec: &WorkersSpec,
        coordinator: SocketAddr,
        secret: &RunSecret,
        bridged: bool,
    ) -> anyhow::Result<Launched> {
        Ok(match spec.launcher {
            Launcher::Dial => {
                Launched::Dial(dial::Children::start(spec.count, coordinator, secret)?)
            }
            Launcher::Swarm => Launched::Swarm(Box::new(
                swarm::Service::start(spec.count, coordinator, secret, bridged).await?,
            )),
            Launcher::External => Launched::External,
            Launcher::Local => anyhow::bail!("local workers do not dial in"),
        })
    }

    /// How long the workers get to dial in: a Swarm task is scheduled, its container created
    /// and started first.
    pub(crate) fn arrival_budget(&self) -> Duration {
        match self {
            Launched::Dial(_) => Duration::from_secs(30),
            Launched::Swarm(_) => Duration::from_secs(90),
            // Pods are scheduled, pulled and started by someone else's cluster.
            Launched::External => Duration::from_secs(300),
        }
    }

    /// A line on how far the launch has got, for the progress output while workers start
    /// (`None` when there is nothing to say beyond the arrivals).
    pub(crate) async fn progress(&self) -> Option<String> {
        match self {
            Launched::Dial(_) | Launched::External => None,
            Launched::Swarm(s) => s.progress().await,
        }
    }

    /// Where worker `index`'s process is (after it dialled in); `None` when nobody here
    /// knows (external workers).
    pub(crate) async fn process(&self, index: u32) -> anyhow::Result<Option<Process>> {
        match self {
            Launched::Dial(c) => c.process(index).await.map(Some),
            Launched::Swarm(s) => s.process(index).await.map(Some),
            Launched::External => Ok(None),
        }
    }

    /// Starts worker `index` again after its process was killed, under the same name, with
    /// the same secret (and, for a Swarm task, on the same network): a child process again, or
    /// a standalone container in the task's place (Swarm cannot start one task again under its
    /// slot). Returns what was started, for the fault's note. The coordinator's listener then
    /// admits it like the first one.
    pub(crate) async fn restart(&self, index: u32) -> anyhow::Result<String> {
        match self {
            Launched::Dial(c) => c
                .restart(index)
                .await
                .map(|pid| format!("a fresh child process, pid {pid}")),
            Launched::Swarm(s) => s
                .restart(index)
                .await
                .map(|name| format!("a replacement container {name} on the task's network")),
            Launched::External => anyhow::bail!(
                "an external worker is restarted by whoever started it (lockbench admits it \
                 again when it dials in)"
            ),
        }
    }

    /// The network namespaces of workers that have one of their own (Swarm tasks on a bridge
    /// network, found by [`Launched::process`]), as client hosts a partition can cut.
    pub(crate) fn client_hosts(&self) -> Vec<lockbench_cluster::Host> {
        match self {
            Launched::Swarm(s) => s.client_hosts(),
            Launched::Dial(_) | Launched::External => Vec::new(),
        }
    }

    /// What a user looks at when workers did not dial in.
    pub(crate) async fn diagnose(&self) -> String {
        match self {
            Launched::Dial(c) => c.diagnose(),
            Launched::Swarm(s) => s.diagnose().await,
            Launched::External => "external workers: check that they were started with \
                 `--coordinator` naming this address, with `--name client<K>` (K = 1..N) and the \
                 same LOCKBENCH_WORKER_SECRET as this command, and that they can reach it"
                .into(),
        }
    }

    /// Stops and removes what was started (processes; the service, its secret, and the swarm
    /// when this run initialised it).
    pub(crate) async fn finish(&self) {
        match self {
            Launched::Dial(c) => c.finish().await,
            Launched::Swarm(s) => s.finish().await,
            Launched::External => {}
        }
    }
}

/// The name of worker `index` (0-based): `client<index+1>`, a worker process's name, so fault
/// targets (`client1`) mean the same worker whoever launched it.
pub(crate) fn worker_name(index: u32) -> String {
    crate::placement::worker_name(index)
}

/// Removes what Swarm runs that are no longer alive left (a `kill -9`: their service, task and
/// replacement containers, secret and `lockbench-net-*` network), and leaves a swarm such a
/// run made when no run's workers are on it. Returns what it removed, for `lockbench down`.
/// With no Docker Engine, or no swarm, it removes nothing.
pub fn remove_swarm_leftovers() -> Vec<String> {
    let swept = leftovers::sweep();
    let mut removed = swept.removed;
    let busy = swarm::docker(&[
        "service",
        "ls",
        "-q",
        "--filter",
        &format!("label={}", swarm::LABEL),
    ])
    .map_or(true, |s| !s.is_empty());
    if swept.orphan_swarm.is_some()
        && !busy
        && swarm::docker(&["swarm", "leave", "--force"]).is_ok()
    {
        removed.push("the swarm a dead run made (`docker swarm leave --force`)".into());
    }
    removed
}
