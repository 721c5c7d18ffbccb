//! Mounting the pass-through over a directory, unmounting it, and this process's live mounts.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use fuser::{Config, MountOption, SessionACL, SessionUnmounter};
use nix::fcntl::OFlag;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::stat::Mode;

use crate::control::{DiskControl, Stall};
use crate::mountinfo::{FS_NAME, detach, mounts};
use crate::passthrough::SlowFs;

/// How long unmounting waits for released operations to be done.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

/// How long unmounting waits for the session to end after the kernel let the mount go. It
/// ends at once unless a copy of the mount lives on in another mount namespace (a process
/// that unshared its mounts while this one was up, e.g. `ip netns exec`): the session then
/// serves that copy until the namespace is gone, in the background.
const SESSION_WAIT: Duration = Duration::from_secs(1);

/// The live mounts of this process, by canonical path.
static LIVE: LazyLock<Mutex<HashMap<PathBuf, DiskControl>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn live() -> MutexGuard<'static, HashMap<PathBuf, DiskControl>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The control of the live mount over `dir` in this process, if any (looked up by canonical
/// path).
pub fn control_at(dir: &Path) -> Option<DiskControl> {
    if let Some(control) = live().get(dir) {
        return Some(control.clone());
    }
    let canonical = dir.canonicalize().ok()?;
    live().get(&canonical).cloned()
}

/// A pass-through mounted over a directory; unmounted on drop (after releasing held ops).
pub struct SlowMount {
    path: PathBuf,
    control: DiskControl,
    running: Option<Running>,
}

/// The threads of a mount that is up.
struct Running {
    unmounter: SessionUnmounter,
    session: JoinHandle<io::Result<()>>,
    held: JoinHandle<()>,
}

impl SlowMount {
    /// Opens `dir` (must exist), then mounts the pass-through over it (fs name
    /// `lockbench-slowdisk`, options: allow_other, default_permissions, suid off, dev off; the
    /// kernel checks permissions against the attributes the pass-through reports). Fails with
    /// a message that says what is wrong and how to fix it when /dev/fuse is missing or the
    /// mount is refused (not root). Registers the control in a process-wide registry keyed by
    /// the canonical `dir`.
    ///
    /// The process's soft limit of open files is raised to its hard limit: the pass-through
    /// keeps a descriptor on every file the kernel holds an inode for.
    pub fn mount_over(dir: &Path) -> anyhow::Result<SlowMount> {
        preflight()?;
        let path = canonical(dir)?;
        let mut live = live();
        if live.contains_key(&path) {
            bail!(
                "{} already has a slow-disk mount in this process",
                path.display()
            );
        }
        if mounts(&path).contains(&path) {
            bail!(
                "{} already has a {FS_NAME} mount over it (from another process, or one left \
                 by a run that crashed): detach it first (`umount -l {}`)",
                path.display(),
                path.display()
            );
        }
        // Opened before the mount: the pass-through reaches the real directory through it.
        let root = nix::fcntl::open(
            &path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("opening {}", path.display()))?;
        raise_open_files();
        let (control, held) =
            DiskControl::start().context("starting the slow-disk held-operations thread")?;
        let stop = |control: &DiskControl, held: JoinHandle<()>| {
            control.close();
            let _ = held.join();
        };
        let fs = match SlowFs::new(root, control.clone()) {
            Ok(fs) => fs,
            Err(err) => {
                stop(&control, held);
                let err = io::Error::from_raw_os_error(err.code());
                return Err(err).with_context(|| format!("stat of {}", path.display()));
            }
        };
        let mut session = match fuser::Session::new(fs, &path, &config()) {
            Ok(session) => session,
            Err(err) => {
                stop(&control, held);
                return Err(refused(&path, err));
            }
        };
        let unmounter = session.unmount_callable();
        // Dropping the session on a failed spawn unmounts it.
        let session = std::thread::Builder::new()
            .name("slowdisk-fuse".into())
            .spawn(move || session.run());
        let session = match session {
            Ok(session) => session,
            Err(err) => {
                stop(&control, held);
                return Err(err).context("starting the slow-disk session thread");
            }
        };
        live.insert(path.clone(), control.clone());
        Ok(SlowMount {
            path,
            control,
            running: Some(Running {
                unmounter,
                session,
                held,
            }),
        })
    }

    /// The handle on this mount's stall.
    pub fn control(&self) -> DiskControl {
        self.control.clone()
    }

    /// The directory mounted over (canonical).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Releases held operations, unmounts (joining the session thread) and deregisters.
    ///
    /// When the mount is busy (a server still holds files open on it) it is detached instead:
    /// it leaves the tree at once and the session goes on serving the open files, in the
    /// background, until they are closed.
    pub fn unmount(mut self) -> anyhow::Result<()> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> anyhow::Result<()> {
        let Some(mut running) = self.running.take() else {
            return Ok(());
        };
        let path = self.path.display().to_string();
        self.control.set(Stall::None);
        if !self.control.wait_idle(RELEASE_WAIT) {
            tracing::warn!(
                "{path}: released write operations still running after {RELEASE_WAIT:?}"
            );
        }
        let unmounted = match running.unmounter.unmount() {
            Ok(()) => join_session(&path, running.session),
            Err(err) if err.raw_os_error() == Some(nix::libc::EBUSY) => {
                tracing::info!(
                    "{path}: the slow-disk mount is busy (files open on it): detached; it \
                     serves them until they are closed"
                );
                detach(&self.path)
            }
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(nix::libc::EINVAL | nix::libc::ENOENT)
                ) =>
            {
                tracing::info!("{path}: the slow-disk mount was already unmounted");
                Ok(())
            }
            Err(err) => {
                let detached = detach(&self.path);
                let outcome = match detached {
                    Ok(()) => "detached it instead".to_string(),
                    Err(detach_err) => format!("detaching failed too: {detach_err:#}"),
                };
                Err(anyhow!(err).context(format!(
                    "unmounting the slow-disk mount over {path} ({outcome})"
                )))
            }
        };
        // Operations that still arrive (a detached mount's open files) are done at once.
        self.control.close();
        if running.held.join().is_err() {
            tracing::error!("{path}: the slow-disk held-operations thread panicked");
        }
        let mut live = live();
        if live
            .get(&self.path)
            .is_some_and(|control| control.same(&self.control))
        {
            live.remove(&self.path);
        }
        unmounted
    }
}

impl Drop for SlowMount {
    fn drop(&mut self) {
        if let Err(err) = self.shut_down() {
            tracing::warn!("{err:#}");
        }
    }
}

/// The session's mount options: anyone may use it (the servers run as their own users), the
/// kernel checks permissions against the reported attributes, no set-user-ID or devices.
fn config() -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(FS_NAME.into()),
        MountOption::CUSTOM(format!("subtype={FS_NAME}")),
        MountOption::DefaultPermissions,
        MountOption::NoSuid,
        MountOption::NoDev,
    ];
    config.acl = SessionACL::All;
    // One thread can serve reads while the other does a passed-through fsync.
    config.n_threads = Some(2);
    config
}

/// Waits (boundedly) for the session thread to end after the unmount.
fn join_session(path: &str, session: JoinHandle<io::Result<()>>) -> anyhow::Result<()> {
    let deadline = Instant::now() + SESSION_WAIT;
    while !session.is_finished() {
        if Instant::now() >= deadline {
            // A copy of the mount in another mount namespace keeps the kernel's connection
            // open; the session serves it in the background until that namespace is gone.
            tracing::info!(
                "{path}: unmounted here, but a copy of the mount in another mount namespace \
                 is still served (in the background, without a stall)"
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    match session.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => {
            Err(anyhow!(err)).with_context(|| format!("the slow-disk session over {path}"))
        }
        Err(_) => bail!("the slow-disk session thread over {path} panicked"),
    }
}

/// Checks what a mount needs (root, a usable `/dev/fuse`) before trying one, saying what is
/// missing: a caller that must stop a server to mount under it asks first.
pub fn preflight() -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "the slow-disk fault mounts a FUSE pass-through over the server's data directory, \
             which needs root (CAP_SYS_ADMIN to mount with allow_other, CAP_CHOWN to give the \
             files it creates to the server's user): run lockbench as root, or choose a run \
             without a disk fault"
        );
    }
    match std::fs::metadata("/dev/fuse") {
        Ok(meta) if meta.file_type().is_char_device() => Ok(()),
        Ok(_) => bail!(
            "/dev/fuse is not a character device: recreate it with `mknod /dev/fuse c 10 229`"
        ),
        Err(err) => bail!(
            "/dev/fuse is missing ({err}): the FUSE kernel module is not loaded or the device \
             is not available here; load it with `modprobe fuse` (on the host), or start the \
             container with `--device /dev/fuse --cap-add SYS_ADMIN`"
        ),
    }
}

/// `dir` resolved, saying what is wrong when it cannot be mounted over.
fn canonical(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = match dir.canonicalize() {
        Ok(path) => path,
        Err(err) if err.raw_os_error() == Some(nix::libc::ENOTCONN) => bail!(
            "{} is a dead {FS_NAME} mount (the process that served it is gone): detach it \
             first (`umount -l {}`)",
            dir.display(),
            dir.display()
        ),
        Err(err) if err.kind() == io::ErrorKind::NotFound => bail!(
            "{} does not exist: the data directory must exist before the slow disk is \
             mounted over it",
            dir.display()
        ),
        Err(err) => return Err(err).with_context(|| format!("resolving {}", dir.display())),
    };
    if !path.is_dir() {
        bail!("{} is not a directory", path.display());
    }
    Ok(path)
}

/// The error for a mount the kernel (or fusermount) refused.
fn refused(path: &Path, err: io::Error) -> anyhow::Error {
    let hint = match err.raw_os_error() {
        Some(nix::libc::ENODEV) => {
            "the kernel has no FUSE filesystem: load it with `modprobe fuse`".to_string()
        }
        Some(nix::libc::ENOENT) => "/dev/fuse cannot be opened: load the FUSE module with \
                                     `modprobe fuse`, or pass the device into the container \
                                     (`--device /dev/fuse`)"
            .to_string(),
        _ => "mounting needs root with CAP_SYS_ADMIN and a usable /dev/fuse: run lockbench as \
              root; in a container add `--cap-add SYS_ADMIN --device /dev/fuse` (and a \
              seccomp/AppArmor profile that allows mount)"
            .to_string(),
    };
    anyhow!(
        "mounting the slow-disk pass-through over {} failed: {err}; {hint}",
        path.display()
    )
}

/// Raises the soft limit of open files to the hard limit (the pass-through holds a descriptor
/// per inode the kernel knows).
fn raise_open_files() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let want = hard.min(1 << 20);
        if soft < want
            && let Err(err) = setrlimit(Resource::RLIMIT_NOFILE, want, hard)
        {
            tracing::warn!("raising the open-files limit from {soft} to {want}: {err}");
        }
    }
}
