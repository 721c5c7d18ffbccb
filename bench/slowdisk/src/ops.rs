//! The backing work of the operations that need more than one syscall, and of reads and
//! writes: what a request does to the real directory, whether it runs now or held.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;

use fuser::{Errno, FileAttr, FileHandle, FileType, INodeNo, Request, TimeOrNow};
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::stat::Mode;

use crate::backing::{
    Res, Sys, attr, backing_flags, chmod, chown, give, open_path, proc_path, set_times, stat,
};
use crate::handles::Handles;
use crate::inodes::Inodes;

/// What held operations need after the request that queued them is gone.
pub(crate) struct Inner {
    pub(crate) inodes: Inodes,
    pub(crate) handles: Handles,
}

/// The user a request comes from: the owner of what it creates.
#[derive(Clone, Copy)]
pub(crate) struct Who {
    uid: u32,
    gid: u32,
}

impl Who {
    pub(crate) fn of(req: &Request) -> Who {
        Who {
            uid: req.uid(),
            gid: req.gid(),
        }
    }
}

/// A setattr's changes.
pub(crate) struct Change {
    pub(crate) mode: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) size: Option<u64>,
    pub(crate) atime: Option<TimeOrNow>,
    pub(crate) mtime: Option<TimeOrNow>,
}

impl Change {
    /// Applies the changes to `node` (through the open `file` when the kernel named one) and
    /// returns the new attributes.
    pub(crate) fn apply(&self, ino: INodeNo, node: &OwnedFd, file: Option<&File>) -> Res<FileAttr> {
        if let Some(mode) = self.mode {
            chmod(node, mode)?;
        }
        if self.uid.is_some() || self.gid.is_some() {
            chown(node, self.uid, self.gid)?;
        }
        if let Some(size) = self.size {
            match file {
                Some(file) => file.set_len(size).sys()?,
                None => nix::unistd::truncate(&proc_path(node), size as libc::off_t).sys()?,
            }
        }
        if self.atime.is_some() || self.mtime.is_some() {
            set_times(node, self.atime, self.mtime)?;
        }
        Ok(attr(ino, &stat(node)?))
    }
}

impl Inner {
    /// The entry for a backing file just found or made (counts one lookup).
    pub(crate) fn entry(&self, fd: OwnedFd) -> Res<FileAttr> {
        let st = stat(&fd)?;
        Ok(attr(self.inodes.remember(fd, &st), &st))
    }

    /// The entry for `name`, just created in `parent` for `who` with `mode`.
    pub(crate) fn created(
        &self,
        parent: &OwnedFd,
        name: &OsStr,
        who: Who,
        mode: u32,
        kind: FileType,
    ) -> Res<FileAttr> {
        let fd = open_path(parent, name)?;
        let st = give(&fd, &stat(parent)?, who.uid, who.gid, mode, kind)?;
        Ok(attr(self.inodes.remember(fd, &st), &st))
    }

    /// Makes the directory `name` in `parent` for `who` (`mode`: the request's umask applied).
    pub(crate) fn mkdir(
        &self,
        parent: &OwnedFd,
        name: &OsStr,
        mode: u32,
        who: Who,
    ) -> Res<FileAttr> {
        nix::sys::stat::mkdirat(parent, name, Mode::from_bits_truncate(mode)).sys()?;
        self.created(parent, name, who, mode, FileType::Directory)
    }

    /// Creates `name` in `parent` for `who` (or opens the file there, when the request allows
    /// an existing one) with the request's open flags; its entry and its new handle.
    pub(crate) fn create(
        &self,
        parent: &OwnedFd,
        name: &OsStr,
        mode: u32,
        flags: i32,
        who: Who,
    ) -> Res<(FileAttr, FileHandle)> {
        let flags = backing_flags(flags) | OFlag::O_CREAT;
        let perm = Mode::from_bits_truncate(mode);
        // O_EXCL first, to know whether this call made the file (and so gives it away).
        let (fd, made) = match nix::fcntl::openat(parent, name, flags | OFlag::O_EXCL, perm) {
            Ok(fd) => (fd, true),
            Err(nix::errno::Errno::EEXIST) if !flags.contains(OFlag::O_EXCL) => {
                let fd = nix::fcntl::openat(parent, name, flags - OFlag::O_CREAT, perm).sys()?;
                (fd, false)
            }
            Err(err) => return Err(Errno::from_i32(err as i32)),
        };
        let file = File::from(fd);
        let node = nix::fcntl::open(
            &proc_path(&file),
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .sys()?;
        let st = if made {
            give(
                &node,
                &stat(parent)?,
                who.uid,
                who.gid,
                mode,
                FileType::RegularFile,
            )?
        } else {
            stat(&node)?
        };
        let ino = self.inodes.remember(node, &st);
        Ok((attr(ino, &st), self.handles.add_file(file)))
    }
}

/// Reads `size` bytes at `offset` (fewer only at the end of the file).
pub(crate) fn read_at(file: &File, offset: u64, size: u32) -> Res<Vec<u8>> {
    let mut buf = vec![0; size as usize];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) if done > 0 => break,
            Err(err) => return Err(err.into()),
        }
    }
    buf.truncate(done);
    Ok(buf)
}

/// Writes all of `data` at `offset`; the count written.
pub(crate) fn write_at(file: &File, offset: u64, data: &[u8]) -> Res<u32> {
    file.write_all_at(data, offset).sys()?;
    Ok(data.len() as u32)
}

/// `fsync`, or `fdatasync` when only the data must be synced.
pub(crate) fn sync(file: &File, datasync: bool) -> Res<()> {
    if datasync {
        file.sync_data().sys()
    } else {
        file.sync_all().sys()
    }
}
