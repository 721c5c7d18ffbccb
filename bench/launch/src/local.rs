//! Worker processes this run starts itself (`launcher = "local"`, the fencing holder, the
//! failover workload's candidates): where they run ([`WorkerPlace`]) and the `lockbench
//! worker` command that starts one there ([`WorkerCommands`]).
//!
//! Why this shape: a fault can only cut a client off, or pause it with its heartbeats, if the
//! client is a separate process on a host of its own. So worker `client<N>` (slot N-1) runs
//! inside the managed cluster's client host `client<N>` in the `netns` topology, in client
//! container `lockbench-client<N>` on docker-compose.yml's network, and as a plain child
//! process elsewhere. The run engine chooses the place (it knows the servers and holds the
//! locks); this module only starts workers there, finds the pid to signal, and removes the
//! client hosts or containers at the end.

use crate::worker_name;
use anyhow::Context;
use lockbench_cluster::Network;
use lockbench_workloads::WorkerProcess;
use lockbench_workloads::worker::{Job, WorkerSinks};
use nix::unistd::Pid;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Command;

/// Where worker processes run.
#[derive(Clone)]
pub enum WorkerPlace {
    /// Child processes in the root namespace.
    Here,
    /// In the client hosts of this managed network (`netns` topology).
    Hosts(Network),
    /// In client containers on the compose network.
    Containers,
}

impl WorkerPlace {
    /// What makes worker commands for this place (a task that restarts killed workers while
    /// the run goes on keeps one).
    pub fn commands(&self) -> WorkerCommands {
        WorkerCommands {
            place: self.clone(),
        }
    }

    /// `true` for the managed cluster's client hosts (`netns` topology): the servers are then
    /// on its own bridge, which this host routes to from Docker's bridge networks too.
    pub fn on_managed_bridge(&self) -> bool {
        matches!(self, WorkerPlace::Hosts(_))
    }

    /// Where workers run, for the log, with the resource service's address `service`:
    /// `client hosts lb-client<N> on lb-br0 ...` or `the root namespace ...`.
    pub fn describe(&self, service: IpAddr) -> String {
        match self {
            WorkerPlace::Hosts(net) => format!(
                "client hosts {}client<N> on {} ({}), resource service on {}",
                net.config().prefix,
                net.config().bridge(),
                net.config().cidr(),
                service
            ),
            WorkerPlace::Containers => format!(
                "client containers lockbench-client<N> on the {} network, resource service on {}",
                lockbench_compose::NETWORK,
                service
            ),
            WorkerPlace::Here => format!("the root namespace, resource service on {service}"),
        }
    }

    /// Removes the client containers or client hosts the workers ran in (and anything still
    /// running in them), warning about what could not be removed. Call once, at the end of
    /// the run.
    pub async fn remove(&self) {
        if let WorkerPlace::Containers = self {
            match lockbench_compose::clients::remove_all().await {
                Ok(removed) if !removed.is_empty() => {
                    tracing::info!(?removed, "client containers removed")
                }
                Ok(_) => {}
                Err(e) => eprintln!(
                    "warning: could not remove the client containers: {e} \
                     (`docker rm -f $(docker ps -aq --filter label={})`)",
                    lockbench_compose::clients::LABEL
                ),
            }
        }
        if let WorkerPlace::Hosts(net) = self.clone() {
            match tokio::task::spawn_blocking(move || net.remove_client_hosts()).await {
                Ok(Ok(removed)) if !removed.is_empty() => {
                    tracing::info!(?removed, "client hosts removed")
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => eprintln!(
                    "warning: could not remove the client hosts: {e:#} (run `lockbench down`)"
                ),
                Err(e) => eprintln!("warning: could not remove the client hosts: {e}"),
            }
        }
    }
}

/// Makes `lockbench worker` command lines for the workers of one [`WorkerPlace`].
#[derive(Clone)]
pub struct WorkerCommands {
    place: WorkerPlace,
}

impl WorkerCommands {
    /// Starts the worker process of slot `slot` with `job`, its messages going to `sinks`,
    /// and tells it the pid to signal and its container.
    pub async fn start(
        &self,
        slot: u32,
        job: &Job,
        sinks: WorkerSinks,
    ) -> anyhow::Result<WorkerProcess> {
        let cmd = self.command(slot).await?;
        let name = worker_name(slot);
        let mut worker = WorkerProcess::spawn(name.clone(), cmd, job, sinks)
            .await
            .with_context(|| format!("cannot start worker process {name}"))?;
        let pid = self.pid(slot, worker.handle().pid).await?;
        worker.set_pid(pid, self.container(slot), self.via_docker());
        Ok(worker)
    }

    /// The `lockbench worker` command for slot `slot` (on compose: `docker run`, after
    /// removing a container of the same name, a killed worker's).
    pub async fn command(&self, slot: u32) -> anyhow::Result<Command> {
        if let WorkerPlace::Containers = self.place {
            let exe = std::env::current_exe().context("cannot find the lockbench binary")?;
            lockbench_compose::clients::remove(slot + 1).await;
            let mut cmd = lockbench_compose::clients::command(slot + 1, &exe);
            cmd.arg("worker");
            return Ok(cmd);
        }
        // This very binary through /proc: still the right one if the file was replaced or
        // deleted since the run started (a rebuild during a long run).
        let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
        if !exe.exists() {
            anyhow::bail!("cannot find the lockbench binary at {}", exe.display());
        }
        let mut cmd = match &self.place {
            WorkerPlace::Hosts(net) => net
                .client_host(slot + 1)
                .with_context(|| format!("cannot create client host {}", worker_name(slot)))?
                .command(exe),
            _ => Command::new(exe),
        };
        cmd.arg("worker");
        Ok(cmd)
    }

    /// The container the worker of `slot` runs in (compose), `None` elsewhere.
    pub fn container(&self, slot: u32) -> Option<String> {
        match self.place {
            WorkerPlace::Containers => Some(lockbench_compose::container(&worker_name(slot))),
            _ => None,
        }
    }

    /// `true` when the workers' signals go through Docker (`docker kill --signal`): client
    /// containers, and this process cannot signal their processes itself (see
    /// `lockbench_compose::access`).
    pub fn via_docker(&self) -> bool {
        matches!(self.place, WorkerPlace::Containers)
            && lockbench_compose::access() == lockbench_compose::Access::Exec
    }

    /// The pid to signal for the worker of `slot`, whose command was started as `spawned`:
    /// `spawned` itself, except on compose, where that is the `docker` client and the worker
    /// is its container's process (waited for until the container runs).
    pub async fn pid(&self, slot: u32, spawned: Pid) -> anyhow::Result<Pid> {
        match self.place {
            WorkerPlace::Containers => lockbench_compose::clients::host_pid(slot + 1)
                .await
                .map(|p| Pid::from_raw(p as i32))
                .map_err(anyhow::Error::msg),
            _ => Ok(spawned),
        }
    }
}
