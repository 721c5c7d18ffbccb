//! The pass-through filesystem: every operation on the backing directory, the write-side ones
//! through the stall.
//!
//! Write-side operations (write, fsync, fsyncdir, fallocate, truncate, create, mkdir, unlink,
//! rename) go through [`DiskControl::admit`]: done on the session thread when there is no
//! stall, otherwise queued (the backing syscall together with its reply) for the control's
//! helper thread. Everything else is done on the session thread at once, so reads, lookups,
//! attributes and listings are never blocked by held operations.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, IoctlFlags, LockOwner, OpenFlags, PollEvents, PollFlags, PollNotifier,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyIoctl, ReplyLseek, ReplyOpen, ReplyPoll, ReplyStatfs, ReplyWrite, ReplyXattr, Request,
    TimeOrNow, WriteFlags,
};
use nix::fcntl::{AT_FDCWD, AtFlags, FallocateFlags};
use nix::libc;
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::{AccessFlags as Access, UnlinkatFlags};

use crate::backing::{Res, Sys, attr, backing_flags, open_path, proc_path, reopen, stat};
use crate::control::{Admission, DiskControl};
use crate::handles::{DirHandle, Handles};
use crate::inodes::Inodes;
use crate::ops::{Change, Inner, Who, read_at, sync, write_at};

/// How long the kernel may cache an entry or attributes.
const TTL: Duration = Duration::from_secs(1);

/// An opened file keeps the kernel's page cache of it. The backing files change only through
/// the mount (which hides their directory), so the cache stays right; and an open that dropped
/// the cache would wait for every page a held write keeps locked, so a frozen write in a file
/// would block every later open of it.
const OPENED: FopenFlags = FopenFlags::FOPEN_KEEP_CACHE;

/// The pass-through over one backing directory.
pub(crate) struct SlowFs {
    inner: Arc<Inner>,
    control: DiskControl,
}

impl SlowFs {
    /// A pass-through over the directory `root` (a descriptor opened before the mount).
    pub(crate) fn new(root: OwnedFd, control: DiskControl) -> Res<SlowFs> {
        let st = stat(&root)?;
        Ok(SlowFs {
            inner: Arc::new(Inner {
                inodes: Inodes::new(root, &st),
                handles: Handles::default(),
            }),
            control,
        })
    }

    /// Does a write-side operation now, or queues it behind the stall.
    fn write_side(&self, work: impl FnOnce() + Send + 'static) {
        match self.control.admit() {
            Admission::Now => work(),
            Admission::Later(later) => later.run(work),
        }
    }

    fn node(&self, ino: INodeNo) -> Res<Arc<OwnedFd>> {
        self.inner.inodes.fd(ino)
    }
}

fn answer_entry(reply: ReplyEntry, res: Res<FileAttr>) {
    match res {
        Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
        Err(err) => reply.error(err),
    }
}

fn answer_attr(reply: ReplyAttr, res: Res<FileAttr>) {
    match res {
        Ok(attr) => reply.attr(&TTL, &attr),
        Err(err) => reply.error(err),
    }
}

fn answer_empty(reply: ReplyEmpty, res: Res<()>) {
    match res {
        Ok(()) => reply.ok(),
        Err(err) => reply.error(err),
    }
}

impl Filesystem for SlowFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let res = self
            .node(parent)
            .and_then(|dir| open_path(&*dir, name))
            .and_then(|fd| self.inner.entry(fd));
        answer_entry(reply, res);
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inner.inodes.forget(ino, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let st = match fh.and_then(|fh| self.inner.handles.file(fh).ok()) {
            Some(file) => stat(&*file),
            None => self.node(ino).and_then(|node| stat(&*node)),
        };
        answer_attr(reply, st.map(|st| attr(ino, &st)));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let node = match self.node(ino) {
            Ok(node) => node,
            Err(err) => return reply.error(err),
        };
        let file = fh.and_then(|fh| self.inner.handles.file(fh).ok());
        let change = Change {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        };
        if size.is_some() {
            // A truncate is a write.
            self.write_side(move || {
                answer_attr(reply, change.apply(ino, &node, file.as_deref()));
            });
        } else {
            answer_attr(reply, change.apply(ino, &node, file.as_deref()));
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let res = self
            .node(ino)
            .and_then(|node| nix::fcntl::readlinkat(&*node, c"").sys());
        match res {
            Ok(target) => reply.data(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str())),
            Err(err) => reply.error(err),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let who = Who::of(req);
        let perm = mode & !umask & 0o7777;
        let res = self.node(parent).and_then(|dir| {
            nix::sys::stat::mknodat(
                &*dir,
                name,
                SFlag::from_bits_truncate(mode & libc::S_IFMT),
                Mode::from_bits_truncate(perm),
                libc::dev_t::from(rdev),
            )
            .sys()?;
            let kind = crate::backing::kind(mode);
            self.inner.created(&dir, name, who, perm, kind)
        });
        answer_entry(reply, res);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let dir = match self.node(parent) {
            Ok(dir) => dir,
            Err(err) => return reply.error(err),
        };
        let (inner, who, name) = (Arc::clone(&self.inner), Who::of(req), name.to_owned());
        let mode = mode & !umask & 0o7777;
        self.write_side(move || answer_entry(reply, inner.mkdir(&dir, &name, mode, who)));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let dir = match self.node(parent) {
            Ok(dir) => dir,
            Err(err) => return reply.error(err),
        };
        let name = name.to_owned();
        self.write_side(move || {
            let res = nix::unistd::unlinkat(&*dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir);
            answer_empty(reply, res.sys());
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let res = self
            .node(parent)
            .and_then(|dir| nix::unistd::unlinkat(&*dir, name, UnlinkatFlags::RemoveDir).sys());
        answer_empty(reply, res);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let who = Who::of(req);
        let res = self.node(parent).and_then(|dir| {
            nix::unistd::symlinkat(target, &*dir, link_name).sys()?;
            self.inner
                .created(&dir, link_name, who, 0o777, FileType::Symlink)
        });
        answer_entry(reply, res);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let dirs = self
            .node(parent)
            .and_then(|from| Ok((from, self.node(newparent)?)));
        let (from, to) = match dirs {
            Ok(dirs) => dirs,
            Err(err) => return reply.error(err),
        };
        let (name, newname) = (name.to_owned(), newname.to_owned());
        let flags = nix::fcntl::RenameFlags::from_bits_retain(flags.bits());
        self.write_side(move || {
            let res =
                nix::fcntl::renameat2(&*from, name.as_os_str(), &*to, newname.as_os_str(), flags);
            answer_empty(reply, res.sys());
        });
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let res = self.node(ino).and_then(|node| {
            let dir = self.node(newparent)?;
            // The magic link names the file itself; following it links that file.
            nix::unistd::linkat(
                AT_FDCWD,
                &proc_path(&*node),
                &*dir,
                newname,
                AtFlags::AT_SYMLINK_FOLLOW,
            )
            .sys()?;
            self.inner.entry(open_path(&*dir, newname)?)
        });
        answer_entry(reply, res);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let res = self
            .node(ino)
            .and_then(|node| reopen(&*node, backing_flags(flags.0)));
        match res {
            Ok(file) => reply.opened(self.inner.handles.add_file(file), OPENED),
            Err(err) => reply.error(err),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self
            .inner
            .handles
            .file(fh)
            .and_then(|file| read_at(&file, offset, size))
        {
            Ok(data) => reply.data(&data),
            Err(err) => reply.error(err),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let file = match self.inner.handles.file(fh) {
            Ok(file) => file,
            Err(err) => return reply.error(err),
        };
        let answer = |reply: ReplyWrite, res: Res<u32>| match res {
            Ok(written) => reply.written(written),
            Err(err) => reply.error(err),
        };
        match self.control.admit() {
            Admission::Now => answer(reply, write_at(&file, offset, data)),
            Admission::Later(later) => {
                let data = data.to_vec();
                later.run(move || answer(reply, write_at(&file, offset, &data)));
            }
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Writes reach the backing file when answered; locks are the kernel's (local).
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.inner.handles.remove_file(fh);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let file = match self.inner.handles.file(fh) {
            Ok(file) => file,
            Err(err) => return reply.error(err),
        };
        self.write_side(move || answer_empty(reply, sync(&file, datasync)));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.node(ino).and_then(|node| DirHandle::open(&node)) {
            Ok(dir) => reply.opened(self.inner.handles.add_dir(dir), FopenFlags::empty()),
            Err(err) => reply.error(err),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dir = match self.inner.handles.dir(fh) {
            Ok(dir) => dir,
            Err(err) => return reply.error(err),
        };
        let listing = match dir.listing(offset) {
            Ok(listing) => listing,
            Err(err) => return reply.error(err),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (at, entry) in listing.iter().enumerate().skip(start) {
            if reply.add(INodeNo(entry.ino), at as u64 + 1, entry.kind, &entry.name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.inner.handles.remove_dir(fh);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let dir = match self.inner.handles.dir(fh) {
            Ok(dir) => dir,
            Err(err) => return reply.error(err),
        };
        self.write_side(move || answer_empty(reply, sync(dir.file(), datasync)));
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let res = self
            .node(ino)
            .and_then(|node| nix::sys::statvfs::fstatvfs(&*node).sys());
        match res {
            Ok(st) => reply.statfs(
                st.blocks(),
                st.blocks_free(),
                st.blocks_available(),
                st.files(),
                st.files_free(),
                st.block_size() as u32,
                st.name_max() as u32,
                st.fragment_size() as u32,
            ),
            Err(err) => reply.error(err),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let res = self.node(ino).and_then(|node| {
            let mask = Access::from_bits_truncate(mask.bits());
            nix::unistd::faccessat(AT_FDCWD, &proc_path(&*node), mask, AtFlags::empty()).sys()
        });
        answer_empty(reply, res);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let dir = match self.node(parent) {
            Ok(dir) => dir,
            Err(err) => return reply.error(err),
        };
        let (inner, who, name) = (Arc::clone(&self.inner), Who::of(req), name.to_owned());
        let mode = mode & !umask & 0o7777;
        self.write_side(move || match inner.create(&dir, &name, mode, flags, who) {
            Ok((attr, fh)) => reply.created(&TTL, &attr, Generation(0), fh, OPENED),
            Err(err) => reply.error(err),
        });
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn poll(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _ph: PollNotifier,
        _events: PollEvents,
        _flags: PollFlags,
        reply: ReplyPoll,
    ) {
        // The kernel then treats the files as always ready, as a local file is.
        reply.error(Errno::ENOSYS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let file = match self.inner.handles.file(fh) {
            Ok(file) => file,
            Err(err) => return reply.error(err),
        };
        self.write_side(move || {
            let res = nix::fcntl::fallocate(
                &*file,
                FallocateFlags::from_bits_retain(mode),
                offset as libc::off_t,
                length as libc::off_t,
            );
            answer_empty(reply, res.sys());
        });
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        let res = self.inner.handles.file(fh).and_then(|file| {
            // SAFETY: lseek on a descriptor the handle keeps open; SEEK_DATA and SEEK_HOLE
            // (the only whence the kernel forwards) are absolute.
            let at = unsafe { libc::lseek(file.as_raw_fd(), offset, whence) };
            nix::errno::Errno::result(at).sys()
        });
        match res {
            Ok(at) => reply.offset(at),
            Err(err) => reply.error(err),
        }
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        _fh_in: FileHandle,
        _offset_in: u64,
        _ino_out: INodeNo,
        _fh_out: FileHandle,
        _offset_out: u64,
        _len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        // The kernel falls back to reads and writes, which pass through the stall.
        reply.error(Errno::ENOSYS);
    }
}
