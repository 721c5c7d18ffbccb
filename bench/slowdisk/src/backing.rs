//! Syscalls on the backing files, relative to descriptors opened before the mount.
//!
//! Every path the pass-through resolves starts from a descriptor: a name relative to a
//! directory's descriptor (`openat`, `mkdirat`, ...), or a file's own descriptor reopened through
//! `/proc/self/fd` (its magic link names the very file, even when the mount hides its path).
//! Errors are passed on as the same errno.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo, TimeOrNow};
use nix::fcntl::{AtFlags, OFlag};
use nix::libc;
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::{Gid, Uid};

/// A backing syscall's result, its error as the errno to answer.
pub(crate) type Res<T> = Result<T, Errno>;

/// Turns a syscall error into the errno to answer.
pub(crate) trait Sys<T> {
    fn sys(self) -> Res<T>;
}

impl<T> Sys<T> for nix::Result<T> {
    fn sys(self) -> Res<T> {
        self.map_err(|e| Errno::from_i32(e as i32))
    }
}

impl<T> Sys<T> for std::io::Result<T> {
    fn sys(self) -> Res<T> {
        self.map_err(Errno::from)
    }
}

/// `/proc/self/fd/N`: the file `fd` is open on, whatever its path now.
pub(crate) fn proc_path(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The stat of the file `fd` is open on (an `O_PATH` descriptor too; a symlink itself).
pub(crate) fn stat(fd: &impl AsFd) -> Res<FileStat> {
    nix::sys::stat::fstatat(
        fd,
        c"",
        AtFlags::AT_EMPTY_PATH | AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .sys()
}

/// A descriptor (`O_PATH`, not following a symlink) on `name` in the directory `dir`.
pub(crate) fn open_path(dir: &impl AsFd, name: &OsStr) -> Res<OwnedFd> {
    nix::fcntl::openat(
        dir,
        name,
        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .sys()
}

/// The open flags for the backing file, from those the kernel sent.
///
/// `O_NOFOLLOW` goes (the kernel resolved the path; the reopen goes through a magic link),
/// `O_APPEND` goes (the kernel computes every write's offset, appends included, and a backing
/// `O_APPEND` would make `pwrite` ignore it), `O_DIRECT` goes (the request buffers are not
/// aligned for it; the data still reaches the backing file, through its page cache, and fsync
/// still syncs it). The rest (access mode, `O_SYNC`, `O_DSYNC`, `O_NOATIME`, ...) is kept.
pub(crate) fn backing_flags(flags: i32) -> OFlag {
    let flags = OFlag::from_bits_retain(flags)
        - (OFlag::O_NOFOLLOW | OFlag::O_APPEND | OFlag::O_DIRECT | OFlag::O_NOCTTY);
    flags | OFlag::O_CLOEXEC
}

/// Opens the file `fd` (an `O_PATH` descriptor) is on, with `flags`.
pub(crate) fn reopen(fd: &impl AsRawFd, flags: OFlag) -> Res<File> {
    let flags = flags - (OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_TRUNC);
    nix::fcntl::open(&proc_path(fd), flags, Mode::empty())
        .map(File::from)
        .sys()
}

/// `chmod` of the file `fd` is on.
pub(crate) fn chmod(fd: &impl AsRawFd, mode: u32) -> Res<()> {
    std::fs::set_permissions(
        proc_path(fd),
        std::fs::Permissions::from_mode(mode & 0o7777),
    )
    .sys()
}

/// `chown` of the file `fd` is on (a symlink itself); `None` leaves that id.
pub(crate) fn chown(fd: &impl AsFd, uid: Option<u32>, gid: Option<u32>) -> Res<()> {
    nix::unistd::fchownat(
        fd,
        c"",
        uid.map(Uid::from_raw),
        gid.map(Gid::from_raw),
        AtFlags::AT_EMPTY_PATH | AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .sys()
}

/// Sets the access and modification times of the file `fd` is on (a symlink itself).
pub(crate) fn set_times(
    fd: &impl AsFd,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
) -> Res<()> {
    let times = [timespec(atime), timespec(mtime)];
    // SAFETY: a valid descriptor, a NUL-terminated empty path and two timespecs.
    let res = unsafe {
        libc::utimensat(
            fd.as_fd().as_raw_fd(),
            c"".as_ptr(),
            times.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    nix::errno::Errno::result(res).map(drop).sys()
}

fn timespec(time: Option<TimeOrNow>) -> libc::timespec {
    let (tv_sec, tv_nsec) = match time {
        None => (0, libc::UTIME_OMIT),
        Some(TimeOrNow::Now) => (0, libc::UTIME_NOW),
        Some(TimeOrNow::SpecificTime(time)) => match time.duration_since(UNIX_EPOCH) {
            Ok(after) => (after.as_secs() as i64, i64::from(after.subsec_nanos())),
            Err(before) => {
                let before = before.duration();
                let nanos = i64::from(before.subsec_nanos());
                if nanos == 0 {
                    (-(before.as_secs() as i64), 0)
                } else {
                    (-(before.as_secs() as i64) - 1, 1_000_000_000 - nanos)
                }
            }
        },
    };
    libc::timespec { tv_sec, tv_nsec }
}

/// Gives a file just created for the request of `uid`/`gid` to that user, with the mode the
/// request asked for (`mode` with the request's umask applied): the daemon runs as root, so the
/// backing file starts as root's, with root's umask. In a set-group-ID directory the file keeps
/// the directory's group, as it would on a local filesystem.
pub(crate) fn give(
    fd: &impl AsFd,
    parent: &FileStat,
    uid: u32,
    gid: u32,
    mode: u32,
    kind: FileType,
) -> Res<FileStat> {
    let inherit_group = parent.st_mode & libc::S_ISGID != 0;
    let gid = (!inherit_group).then_some(gid);
    let mut st = stat(fd)?;
    if st.st_uid != uid || gid.is_some_and(|gid| st.st_gid != gid) {
        chown(fd, Some(uid), gid)?;
        st = stat(fd)?;
    }
    if kind == FileType::Symlink {
        return Ok(st);
    }
    let mut want = mode & 0o7777;
    if kind == FileType::Directory {
        want |= st.st_mode & libc::S_ISGID;
    }
    if st.st_mode & 0o7777 != want {
        chmod(&fd.as_fd(), want)?;
        st = stat(fd)?;
    }
    Ok(st)
}

/// The attributes to report for a backing file: its real stat, with the FUSE inode number.
pub(crate) fn attr(ino: INodeNo, st: &FileStat) -> FileAttr {
    FileAttr {
        ino,
        size: st.st_size.max(0) as u64,
        blocks: st.st_blocks.max(0) as u64,
        atime: system_time(st.st_atime, st.st_atime_nsec),
        mtime: system_time(st.st_mtime, st.st_mtime_nsec),
        ctime: system_time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind: kind(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

fn system_time(secs: i64, nanos: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nanos.clamp(0, 999_999_999) as u64);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

/// The file type in a `st_mode`.
pub(crate) fn kind(mode: u32) -> FileType {
    match SFlag::from_bits_truncate(mode & libc::S_IFMT) {
        SFlag::S_IFDIR => FileType::Directory,
        SFlag::S_IFLNK => FileType::Symlink,
        SFlag::S_IFIFO => FileType::NamedPipe,
        SFlag::S_IFSOCK => FileType::Socket,
        SFlag::S_IFCHR => FileType::CharDevice,
        SFlag::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}
