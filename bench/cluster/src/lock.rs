//! The cluster lock: `<state>/cluster.lock`, held with `flock(2)` while the cluster is being
//! started or stopped, so parallel `lockbench` commands and parallel test processes (one per
//! test binary, or one per test under cargo-nextest) never start the same server twice.
//!
//! `flock` locks belong to an open file description, so two holders in one process exclude each
//! other too, and the kernel drops the lock when its holder dies: a crashed run leaves no stale
//! lock behind.
//!
//! A second lock, `<state>/faults.lock` ([`crate::Cluster::fault_lock`]), is held for a whole
//! run that applies faults or places workers on client hosts: such runs share the client host
//! names (`client1`, ...) and heal by flushing every host's firewall, so two at once would
//! tear down or heal each other's faults. Other runs do not take it.

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// Proof that this process holds the cluster lock; dropping it releases the lock.
pub struct ClusterLock {
    _flock: Flock<File>,
}

impl std::fmt::Debug for ClusterLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterLock")
    }
}

/// Takes the exclusive lock on `<state_dir>/cluster.lock`, waiting for other holders.
pub(crate) async fn lock(state_dir: &Path) -> anyhow::Result<ClusterLock> {
    lock_file(state_dir, "cluster.lock").await
}

/// Takes the exclusive lock on `<state_dir>/<name>`, waiting for other holders.
pub(crate) async fn lock_file(state_dir: &Path, name: &str) -> anyhow::Result<ClusterLock> {
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("cannot create state dir {}", state_dir.display()))?;
    let path = state_dir.join(name);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let flock = tokio::task::spawn_blocking(move || Flock::lock(file, FlockArg::LockExclusive))
        .await?
        .map_err(|(_, errno)| errno)
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(ClusterLock { _flock: flock })
}
