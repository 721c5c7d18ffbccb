//! `launcher = "dial"`: `lockbench worker --coordinator ADDR` as child processes of this one.
//! The transport and handshake of a worker on another host, with nothing between: what the
//! integration tests run, and a way to spread clients over processes without an orchestrator.

use super::{Process, worker_name};
use anyhow::Context;
use lockbench_workloads::dial::{RunSecret, SECRET_ENV};
use nix::unistd::Pid;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Child;

/// The worker processes, by index.
pub(crate) struct Children {
    children: Vec<Child>,
}

impl Children {
    /// Starts `count` workers dialling `coordinator`; the secret goes in their environment.
    pub(crate) fn start(
        count: u32,
        coordinator: SocketAddr,
        secret: &RunSecret,
    ) -> anyhow::Result<Children> {
        // This very binary through /proc, as for worker processes.
        let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
        let mut children = Vec::new();
        for index in 0..count {
            let mut cmd = std::process::Command::new(&exe);
            cmd.args(["worker", "--coordinator", &coordinator.to_string()])
                .args(["--name", &worker_name(index)])
                .env(SECRET_ENV, secret.to_env_value());
            let child = lockbench_workloads::worker::spawn_dialling(cmd)
                .with_context(|| format!("cannot start worker {}", worker_name(index)))?;
            children.push(child);
        }
        Ok(Children { children })
    }

    pub(crate) fn process(&self, index: u32) -> anyhow::Result<Process> {
        let pid = self
            .children
            .get(index as usize)
            .and_then(|c| c.id())
            .with_context(|| format!("worker {} has exited", worker_name(index)))?;
        Ok((Pid::from_raw(pid as i32), None, false))
    }

    pub(crate) fn diagnose(&self) -> String {
        "the workers are this command's children; their errors are above (LOCKBENCH_LOG=debug \
         shows each dial attempt)"
            .into()
    }

    pub(crate) async fn finish(mut self) {
        for child in &mut self.children {
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
