//! `launcher = "dial"`: `lockbench worker --coordinator ADDR` as child processes of this one.
//! The transport and handshake of a worker on another host, with nothing between: what the
//! integration tests run, and a way to spread clients over processes without an orchestrator.
//! A killed child is started again under its name ([`Children::restart`]), as a supervisor
//! would: the coordinator's listener admits it like the first one.

use crate::{Process, worker_name};
use anyhow::Context;
use lockbench_workloads::dial::{RunSecret, SECRET_ENV};
use nix::unistd::Pid;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Child;
use tokio::sync::Mutex;

/// The worker processes, by index, and what starting one again needs.
pub(crate) struct Children {
    children: Mutex<Vec<Child>>,
    coordinator: SocketAddr,
    secret: RunSecret,
}

/// `lockbench worker` dialling `coordinator` as worker `index`, the secret in its environment.
fn spawn(index: u32, coordinator: SocketAddr, secret: &RunSecret) -> anyhow::Result<Child> {
    // This very binary through /proc, as for worker processes.
    let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["worker", "--coordinator", &coordinator.to_string()])
        .args(["--name", &worker_name(index)])
        .env(SECRET_ENV, secret.to_env_value());
    lockbench_workloads::worker::spawn_dialling(cmd)
        .with_context(|| format!("cannot start worker {}", worker_name(index)))
}

impl Children {
    /// Starts `count` workers dialling `coordinator`; the secret goes in their environment.
    pub(crate) fn start(
        count: u32,
        coordinator: SocketAddr,
        secret: &RunSecret,
    ) -> anyhow::Result<Children> {
        let children = (0..count)
            .map(|index| spawn(index, coordinator, secret))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Children {
            children: Mutex::new(children),
            coordinator,
            secret: secret.clone(),
        })
    }

    pub(crate) async fn process(&self, index: u32) -> anyhow::Result<Process> {
        let pid = self
            .children
            .lock()
            .await
            .get(index as usize)
            .and_then(|c| c.id())
            .with_context(|| format!("worker {} has exited", worker_name(index)))?;
        Ok((Pid::from_raw(pid as i32), None, false))
    }

    /// Starts worker `index` again (its process was killed): the old one is reaped, a fresh
    /// one dials in under the same name with the same secret. Returns its pid.
    pub(crate) async fn restart(&self, index: u32) -> anyhow::Result<u32> {
        let mut children = self.children.lock().await;
        let slot = children
            .get_mut(index as usize)
            .with_context(|| format!("no worker {} was started", worker_name(index)))?;
        // SIGKILL was sent; reap it (and make sure it is gone) before its successor starts.
        let _ = slot.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), slot.wait()).await;
        *slot = spawn(index, self.coordinator, &self.secret)?;
        slot.id()
            .with_context(|| format!("restarted worker {} exited at once", worker_name(index)))
    }

    pub(crate) fn diagnose(&self) -> String {
        "the workers are this command's children; their errors are above (LOCKBENCH_LOG=debug \
         shows each dial attempt)"
            .into()
    }

    pub(crate) async fn finish(&self) {
        let mut children = self.children.lock().await;
        for child in children.iter_mut() {
            let _ = child.id().map(|pid| {
                nix::sys::signal::killpg(
                    Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGCONT,
                )
            });
            if tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }
}
