//! Servers moved onto a slow-disk pass-through ([`lockbench_slowdisk`]) for a run whose
//! schedule has a `disk` fault, and back off it after.
//!
//! Why a restart: a server's configuration names its data directory and it keeps its files
//! open, so the pass-through is mounted over that directory while the server is stopped and
//! the server starts again onto it (ZooKeeper and etcd rejoin with their data, PostgreSQL
//! recovers its own, Redis without persistence starts empty, as after a `kill`). Mounted only
//! for such runs: the pass-through costs every write a trip through this process even when
//! nothing is slowed. A mount whose run died (`kill -9`) leaves its server on a dead
//! filesystem; [`Cluster::detach_dead_disks`] stops that server and removes the mount, and the
//! next `up` starts it again.

use crate::cluster::Cluster;
use crate::cluster::STOP_GRACE;
use crate::process;
use crate::spec;
use anyhow::Context;
use lockbench_slowdisk::{DiskControl, SlowMount};
use std::time::Duration;

/// How long servers have to be healthy again after moving onto or off the pass-through.
const HEALTHY_WITHIN: Duration = Duration::from_secs(90);

/// Servers running on slow-disk pass-throughs: put back on their own directories by
/// [`SlowDisks::release`].
pub struct SlowDisks {
    cluster: Cluster,
    mounts: Vec<(&'static str, SlowMount)>,
}

impl Cluster {
    /// Restarts the running servers among `names` with a slow-disk pass-through mounted over
    /// each one's data directory, and waits until they are healthy. The servers are stopped
    /// together and started together (a quorum is back as soon as they are).
    pub async fn mount_slow_disks(&self, names: &[&str]) -> anyhow::Result<SlowDisks> {
        let mut disks = SlowDisks {
            cluster: self.clone(),
            mounts: Vec::new(),
        };
        let running: Vec<(&'static str, u32)> = names
            .iter()
            .filter_map(|n| spec::by_name(n))
            .filter_map(|s| self.server_pid(s.name).map(|pid| (s.name, pid)))
            .collect();
        if running.is_empty() {
            return Ok(disks);
        }
        lockbench_slowdisk::preflight()?;
        let pids: Vec<u32> = running.iter().map(|(_, p)| *p).collect();
        process::terminate(&pids, STOP_GRACE).await;
        let mut failed = None;
        for (name, _) in &running {
            let data = self.node(name).data();
            let mounted = std::fs::create_dir_all(&data)
                .with_context(|| format!("cannot create {}", data.display()))
                .and_then(|()| SlowMount::mount_over(&data));
            match mounted {
                Ok(mount) => disks.mounts.push((name, mount)),
                Err(e) => {
                    failed =
                        Some(e.context(format!("cannot put {name} on a slow-disk pass-through")));
                    break;
                }
            }
        }
        if let Some(e) = failed {
            // Every server back on its own directory before the error goes up.
            for (_, m) in std::mem::take(&mut disks.mounts) {
                let _ = m.unmount();
            }
            let names: Vec<&'static str> = running.iter().map(|(n, _)| *n).collect();
            return Err(match disks.start(&names).await {
                Ok(()) => e,
                Err(again) => e.context(format!("and the servers did not start again: {again:#}")),
            });
        }
        let names = disks.names();
        disks
            .start(&names)
            .await
            .context("cannot start the servers again on their slow-disk pass-throughs")?;
        Ok(disks)
    }

    /// The disk control of server `name`, while it runs on a slow-disk pass-through this
    /// process mounted.
    pub fn disk_control(&self, name: &str) -> Option<DiskControl> {
        lockbench_slowdisk::control_at(&self.node(name).data())
    }

    /// Removes every slow-disk pass-through under the state directory whose serving process
    /// is gone (a run killed with `kill -9`), first stopping the server that ran on it; the
    /// next `up` starts it again. Returns one line per server it did this for.
    pub async fn detach_dead_disks(&self) -> anyhow::Result<Vec<String>> {
        let mut done = Vec::new();
        for path in lockbench_slowdisk::dead_mounts(self.state_dir()) {
            let server = crate::SERVERS
                .iter()
                .find(|s| self.node(s.name).data() == path);
            if let Some(s) = server
                && let Some(pid) = self.server_pid(s.name)
            {
                process::terminate(&[pid], STOP_GRACE).await;
            }
            lockbench_slowdisk::detach(&path)?;
            done.push(match server {
                Some(s) => format!(
                    "stopped {} and removed the dead slow-disk mount over its data directory",
                    s.name
                ),
                None => format!("removed the dead slow-disk mount at {}", path.display()),
            });
        }
        Ok(done)
    }
}

impl SlowDisks {
    /// The servers on pass-throughs.
    pub fn names(&self) -> Vec<&'static str> {
        self.mounts.iter().map(|(n, _)| *n).collect()
    }

    /// Stops the servers, removes the pass-throughs and starts the servers again on their own
    /// directories, waiting until they are healthy.
    pub async fn release(mut self) -> anyhow::Result<()> {
        let mounts = std::mem::take(&mut self.mounts);
        if mounts.is_empty() {
            return Ok(());
        }
        let names: Vec<&'static str> = mounts.iter().map(|(n, _)| *n).collect();
        for (_, m) in &mounts {
            m.control().set(lockbench_slowdisk::Stall::None);
        }
        let pids: Vec<u32> = names
            .iter()
            .filter_map(|n| self.cluster.server_pid(n))
            .collect();
        process::terminate(&pids, STOP_GRACE).await;
        let failed: Vec<String> = mounts
            .into_iter()
            .filter_map(|(name, m)| m.unmount().err().map(|e| format!("{name}: {e:#}")))
            .collect();
        anyhow::ensure!(
            failed.is_empty(),
            "cannot remove the slow-disk pass-throughs: {}",
            failed.join("; ")
        );
        self.start(&names).await
    }

    async fn start(&self, names: &[&'static str]) -> anyhow::Result<()> {
        for name in names {
            if self.cluster.server_pid(name).is_none() {
                self.cluster.start_server(name).await?;
            }
        }
        self.cluster.wait_healthy(names, HEALTHY_WITHIN).await
    }
}
