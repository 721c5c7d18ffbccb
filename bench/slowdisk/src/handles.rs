//! Open files and directories: FUSE file handle -> the backing file opened for it.
//!
//! A handle is shared (`Arc`) with the held operations that use it, so a release that arrives
//! while a write on the handle is held does not close the backing file under it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fuser::{Errno, FileHandle, FileType};
use nix::dir::{Dir, Type};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

use crate::backing::{Res, Sys, kind, proc_path, reopen};

/// The open files and directories of one mount.
#[derive(Default)]
pub(crate) struct Handles {
    files: Mutex<HashMap<u64, Arc<File>>>,
    dirs: Mutex<HashMap<u64, Arc<DirHandle>>>,
    next: AtomicU64,
}

fn lock<T>(map: &Mutex<T>) -> MutexGuard<'_, T> {
    map.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Handles {
    fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Keeps an opened backing file; its handle.
    pub(crate) fn add_file(&self, file: File) -> FileHandle {
        let fh = self.next();
        lock(&self.files).insert(fh, Arc::new(file));
        FileHandle(fh)
    }

    /// The backing file of handle `fh`; `EBADF` when there is none.
    pub(crate) fn file(&self, fh: FileHandle) -> Res<Arc<File>> {
        lock(&self.files).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Drops handle `fh` (the backing file closes when no held operation uses it any more).
    pub(crate) fn remove_file(&self, fh: FileHandle) {
        lock(&self.files).remove(&fh.0);
    }

    /// Keeps an opened directory; its handle.
    pub(crate) fn add_dir(&self, dir: DirHandle) -> FileHandle {
        let fh = self.next();
        lock(&self.dirs).insert(fh, Arc::new(dir));
        FileHandle(fh)
    }

    /// The directory of handle `fh`; `EBADF` when there is none.
    pub(crate) fn dir(&self, fh: FileHandle) -> Res<Arc<DirHandle>> {
        lock(&self.dirs).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Drops directory handle `fh`.
    pub(crate) fn remove_dir(&self, fh: FileHandle) {
        lock(&self.dirs).remove(&fh.0);
    }
}

/// An open backing directory and the listing its readers page through.
///
/// The listing is read whole when a reader starts at offset 0 (opendir, rewinddir), and the
/// offset of an entry is its place in that listing plus one.
pub(crate) struct DirHandle {
    dir: File,
    listing: Mutex<Vec<DirEntry>>,
}

/// One entry of a listing.
pub(crate) struct DirEntry {
    /// The backing inode number (only informative: the kernel looks the name up).
    pub(crate) ino: u64,
    pub(crate) kind: FileType,
    pub(crate) name: OsString,
}

impl DirHandle {
    /// Opens the directory `node` (an `O_PATH` descriptor) is on.
    pub(crate) fn open(node: &OwnedFd) -> Res<DirHandle> {
        let dir = reopen(
            node,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        )?;
        Ok(DirHandle {
            dir,
            listing: Mutex::new(Vec::new()),
        })
    }

    /// The open directory (for fsyncdir).
    pub(crate) fn file(&self) -> &File {
        &self.dir
    }

    /// The listing from `offset` on, reread when `offset` is 0.
    pub(crate) fn listing(&self, offset: u64) -> Res<MutexGuard<'_, Vec<DirEntry>>> {
        let mut listing = lock(&self.listing);
        if offset == 0 {
            *listing = self.read()?;
        }
        Ok(listing)
    }

    fn read(&self) -> Res<Vec<DirEntry>> {
        let mut dir = Dir::open(
            &proc_path(&self.dir),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .sys()?;
        let mut entries = Vec::new();
        for entry in dir.iter() {
            let entry = entry.sys()?;
            let name = entry.file_name();
            let kind = match entry.file_type() {
                Some(Type::Directory) => FileType::Directory,
                Some(Type::File) => FileType::RegularFile,
                Some(Type::Symlink) => FileType::Symlink,
                Some(Type::Fifo) => FileType::NamedPipe,
                Some(Type::Socket) => FileType::Socket,
                Some(Type::CharacterDevice) => FileType::CharDevice,
                Some(Type::BlockDevice) => FileType::BlockDevice,
                None => nix::sys::stat::fstatat(&self.dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                    .map_or(FileType::RegularFile, |st| kind(st.st_mode)),
            };
            entries.push(DirEntry {
                ino: entry.ino(),
                kind,
                name: OsString::from(std::ffi::OsStr::from_bytes(name.to_bytes())),
            });
        }
        Ok(entries)
    }
}
