//! [`Launched`]: the workers one launcher started, and everything the coordinator asks of
//! them: how long to wait for them, where their processes are, starting one again, why they
//! did not come, removing them.

use lockbench_core::workers::{Launcher, WorkersSpec};
use lockbench_workloads::dial::RunSecret;
use nix::unistd::Pid;
use std::net::SocketAddr;
use std::time::Duration;

/// Where a launched worker's process is: its pid on this machine, its container, and whether
/// signals go to it through `docker kill`.
pub type Process = (Pid, Option<String>, bool);

/// The workers a launcher started.
pub struct Launched(Kind);

/// Which launcher started them, and what it keeps to reach them.
enum Kind {
    /// Child processes of this one.
    Dial(crate::dial::Children),
    /// The tasks of a Docker Swarm service.
    Swarm(Box<crate::swarm::Service>),
    /// Nothing: someone else starts the workers.
    External,
}

impl Launched {
    /// Starts `spec.count` workers that dial `coordinator` with `secret`; `bridged`: Swarm
    /// tasks get a bridge network of their own (the servers are on the managed cluster's
    /// bridge, routed to from it), host networking otherwise.
    pub async fn start(
        spec: &WorkersSpec,
        coordinator: SocketAddr,
        secret: &RunSecret,
        bridged: bool,
    ) -> anyhow::Result<Launched> {
        Ok(Launched(match spec.launcher {
            Launcher::Dial => Kind::Dial(crate::dial::Children::start(
                spec.count,
                coordinator,
                secret,
            )?),
            Launcher::Swarm => Kind::Swarm(Box::new(
                crate::swarm::Service::start(spec.count, coordinator, secret, bridged).await?,
            )),
            Launcher::External => Kind::External,
            Launcher::Local => anyhow::bail!("local workers do not dial in"),
        }))
    }

    /// How long the workers get to dial in: a Swarm task is scheduled, its container created
    /// and started first.
    pub fn arrival_budget(&self) -> Duration {
        match &self.0 {
            Kind::Dial(_) => Duration::from_secs(30),
            Kind::Swarm(_) => Duration::from_secs(90),
            // Pods are scheduled, pulled and started by someone else's cluster.
            Kind::External => Duration::from_secs(300),
        }
    }

    /// A line on how far the launch has got, for the progress output while workers start
    /// (`None` when there is nothing to say beyond the arrivals).
    pub async fn progress(&self) -> Option<String> {
        match &self.0 {
            Kind::Dial(_) | Kind::External => None,
            Kind::Swarm(s) => s.progress().await,
        }
    }

    /// Where worker `index`'s process is (after it dialled in); `None` when nobody here
    /// knows (external workers).
    pub async fn process(&self, index: u32) -> anyhow::Result<Option<Process>> {
        match &self.0 {
            Kind::Dial(c) => c.process(index).await.map(Some),
            Kind::Swarm(s) => s.process(index).await.map(Some),
            Kind::External => Ok(None),
        }
    }

    /// Starts worker `index` again after its process was killed, under the same name, with
    /// the same secret (and, for a Swarm task, on the same network): a child process again, or
    /// a standalone container in the task's place (Swarm cannot start one task again under its
    /// slot). Returns what was started, for the fault's note. The coordinator's listener then
    /// admits it like the first one.
    pub async fn restart(&self, index: u32) -> anyhow::Result<String> {
        match &self.0 {
            Kind::Dial(c) => c
                .restart(index)
                .await
                .map(|pid| format!("a fresh child process, pid {pid}")),
            Kind::Swarm(s) => s
                .restart(index)
                .await
                .map(|name| format!("a replacement container {name} on the task's network")),
            Kind::External => anyhow::bail!(
                "an external worker is restarted by whoever started it (lockbench admits it \
                 again when it dials in)"
            ),
        }
    }

    /// The network namespaces of workers that have one of their own (Swarm tasks on a bridge
    /// network, found by [`Launched::process`]), as client hosts a partition can cut.
    pub fn client_hosts(&self) -> Vec<lockbench_cluster::Host> {
        match &self.0 {
            Kind::Swarm(s) => s.client_hosts(),
            Kind::Dial(_) | Kind::External => Vec::new(),
        }
    }

    /// What a user looks at when workers did not dial in.
    pub async fn diagnose(&self) -> String {
        match &self.0 {
            Kind::Dial(c) => c.diagnose(),
            Kind::Swarm(s) => s.diagnose().await,
            Kind::External => "external workers: check that they were started with \
                 `--coordinator` naming this address, with `--name client<K>` (K = 1..N) and the \
                 same LOCKBENCH_WORKER_SECRET as this command, and that they can reach it"
                .into(),
        }
    }

    /// Stops and removes what was started (processes; the service, its secret, and the swarm
    /// when this run initialised it).
    pub async fn finish(&self) {
        match &self.0 {
            Kind::Dial(c) => c.finish().await,
            Kind::Swarm(s) => s.finish().await,
            Kind::External => {}
        }
    }
}
