//! The cluster lock: `<state>/cluster.lock`, held with `flock(2)` while the cluster is being
//! started or stopped, so parallel `lockbench` commands and parallel test processes (one per
//! test binary, or one per test under cargo-nextest) never start the same server twice.
//!
//! `flock` locks belong to an open file description, so two holders in one process exclude each
//! other too, and the kernel drops the lock when its holder dies: a crashed run leaves no stale
//! lock behind.
//!
//! A second lock, `<state>/faults.lock` ([`crate::Cluster::fault_lock_file`]), is held for a whole
//! run that applies faults or places workers on client hosts: such runs share the client host
//! names (`client1`, ...) and heal by flushing every host's firewall, so two at once would
//! tear down or heal each other's faults. Other runs do not take it. The compose cluster's
//! runs take the same kind of lock on a file of their own ([`lock_path`]): its container
//! names are the Docker Engine's, one set per machine.
//!
//! A holder writes who it is into the file ([`holder`]: pid and command line), so a run that
//! has to wait can name the run it waits for. The note is only read while the lock is held
//! by someone else; a dead holder's note is overwritten by the next one.

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::Write;
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
    lock_path(&state_dir.join("cluster.lock")).await
}

/// Takes the exclusive lock on the file `path` (created with its directory if missing),
/// waiting for other holders, and records this process as its [`holder`].
pub async fn lock_path(path: &Path) -> anyhow::Result<ClusterLock> {
    let file = open(path)?;
    let flock = tokio::task::spawn_blocking(move || Flock::lock(file, FlockArg::LockExclusive))
        .await?
        .map_err(|(_, errno)| errno)
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(held(flock))
}

/// Takes the lock on `path` if nobody holds it (see [`lock_path`]); `None` when another
/// holder has it.
pub fn try_lock_path(path: &Path) -> anyhow::Result<Option<ClusterLock>> {
    match Flock::lock(open(path)?, FlockArg::LockExclusiveNonblock) {
        Ok(flock) => Ok(Some(held(flock))),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(errno).with_context(|| format!("cannot lock {}", path.display())),
    }
}

/// Who holds (or last held) the lock on `path`, as the holder wrote it: `pid 1234 (lockbench
/// run fencing --cluster compose)`. `None` when the file has no note.
pub fn holder(path: &Path) -> Option<String> {
    let note = std::fs::read_to_string(path).ok()?;
    let note = note.trim();
    (!note.is_empty()).then(|| note.to_string())
}

fn open(path: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let opened = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path);
    match opened {
        // A lock file another user made (the compose lock in /run/lock, made by a root run,
        // then taken by a user in the `docker` group): flock works on a read-only descriptor
        // too; only the holder's note cannot be written.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => File::open(path),
        other => other,
    }
    .with_context(|| format!("cannot open {}", path.display()))
}

/// The lock, with this process's note written into its file (best effort: a note that cannot
/// be written only makes a waiter's message vaguer).
fn held(flock: Flock<File>) -> ClusterLock {
    let args: Vec<String> = std::env::args().collect();
    let note = format!("pid {} ({})\n", std::process::id(), args.join(" "));
    let mut file: &File = &flock;
    let _ = file
        .set_len(0)
        .and_then(|()| file.write_all(note.as_bytes()));
    ClusterLock { _flock: flock }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_lock_names_its_holder_and_is_free_once_dropped() {
        let dir = std::env::temp_dir().join(format!("lockbench-lock-test-{}", std::process::id()));
        let path = dir.join("run.lock");
        let _ = std::fs::remove_dir_all(&dir);
        // No file, no directory: both are made.
        drop(lock_path(&path).await.unwrap());
        // A note left by a dead holder does not hold the lock.
        std::fs::write(&path, "pid 1 (an earlier run)\n").unwrap();
        let first = lock_path(&path).await.unwrap();
        let who = holder(&path).expect("the holder's note");
        assert!(
            who.starts_with(&format!("pid {} (", std::process::id())),
            "{who}"
        );
        // flock belongs to the open file: a second open in the same process is refused too.
        assert!(try_lock_path(&path).unwrap().is_none());
        let waiter = tokio::spawn({
            let path = path.clone();
            async move { lock_path(&path).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!waiter.is_finished(), "took a lock that was held");
        drop(first);
        let second = tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("the waiter gets the lock once it is released")
            .unwrap()
            .unwrap();
        assert!(try_lock_path(&path).unwrap().is_none());
        drop(second);
        assert!(try_lock_path(&path).unwrap().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
