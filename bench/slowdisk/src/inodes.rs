//! The inode table: FUSE inode number -> a descriptor (`O_PATH`) on the backing file.
//!
//! An inode holds the backing file itself, not its path, so a rename of the file (or of a
//! directory above it) changes nothing here, and an unlinked file that is still open keeps
//! working: databases rename and unlink files a lot (etcd's WAL segments, PostgreSQL's
//! `durable_rename`, Redis's AOF rewrite). A backing file seen twice (a second lookup, a hard
//! link) gets the same inode number, found by its device and inode. An entry lives until the
//! kernel forgets as many lookups as it was given.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, PoisonError};

use fuser::{Errno, INodeNo};
use nix::sys::stat::FileStat;

/// A backing file's identity.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Key {
    dev: u64,
    ino: u64,
}

impl Key {
    fn of(st: &FileStat) -> Key {
        Key {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}

struct Node {
    fd: Arc<OwnedFd>,
    key: Key,
    lookups: u64,
}

#[derive(Default)]
struct Table {
    nodes: HashMap<u64, Node>,
    by_key: HashMap<Key, u64>,
    next: u64,
}

/// The inodes the kernel knows of.
pub(crate) struct Inodes {
    table: Mutex<Table>,
}

impl Inodes {
    /// A table holding the root (inode 1, never forgotten).
    pub(crate) fn new(root: OwnedFd, st: &FileStat) -> Inodes {
        let mut table = Table {
            next: INodeNo::ROOT.0 + 1,
            ..Table::default()
        };
        let key = Key::of(st);
        table.nodes.insert(
            INodeNo::ROOT.0,
            Node {
                fd: Arc::new(root),
                key,
                lookups: 1,
            },
        );
        table.by_key.insert(key, INodeNo::ROOT.0);
        Inodes {
            table: Mutex::new(table),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The backing file of `ino`; `ESTALE` when the kernel forgot it.
    pub(crate) fn fd(&self, ino: INodeNo) -> Result<Arc<OwnedFd>, Errno> {
        self.lock()
            .nodes
            .get(&ino.0)
            .map(|node| Arc::clone(&node.fd))
            .ok_or(Errno::ESTALE)
    }

    /// The inode of the backing file `fd` (with stat `st`), counting one lookup the kernel now
    /// holds: the caller answers with an entry. A file already known keeps its number (and `fd`
    /// is closed).
    pub(crate) fn remember(&self, fd: OwnedFd, st: &FileStat) -> INodeNo {
        let key = Key::of(st);
        let mut table = self.lock();
        if let Some(&ino) = table.by_key.get(&key)
            && let Some(node) = table.nodes.get_mut(&ino)
        {
            node.lookups += 1;
            return INodeNo(ino);
        }
        let ino = table.next;
        table.next += 1;
        table.nodes.insert(
            ino,
            Node {
                fd: Arc::new(fd),
                key,
                lookups: 1,
            },
        );
        table.by_key.insert(key, ino);
        INodeNo(ino)
    }

    /// The kernel dropped `lookups` of its references to `ino`.
    pub(crate) fn forget(&self, ino: INodeNo, lookups: u64) {
        if ino == INodeNo::ROOT {
            return;
        }
        let mut table = self.lock();
        let Some(node) = table.nodes.get_mut(&ino.0) else {
            return;
        };
        node.lookups = node.lookups.saturating_sub(lookups);
        if node.lookups == 0 {
            let key = node.key;
            table.nodes.remove(&ino.0);
            if table.by_key.get(&key) == Some(&ino.0) {
                table.by_key.remove(&key);
            }
        }
    }

    /// How many inodes the table holds (the root included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{OFlag, open};
    use nix::sys::stat::{Mode, fstat};

    fn open_tmp() -> (OwnedFd, FileStat) {
        let fd = open("/tmp", OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty()).unwrap();
        let st = fstat(&fd).unwrap();
        (fd, st)
    }

    #[test]
    fn same_file_same_inode_and_forget_counts_lookups() {
        let (root, root_st) = open_tmp();
        let inodes = Inodes::new(root, &root_st);
        let file = open(
            "/proc/self/exe",
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let st = fstat(&file).unwrap();
        let again = nix::unistd::dup(&file).unwrap();
        let a = inodes.remember(file, &st);
        let b = inodes.remember(again, &st);
        assert_eq!(a, b);
        assert_ne!(a, INodeNo::ROOT);
        assert_eq!(inodes.len(), 2);
        inodes.forget(a, 1);
        assert!(inodes.fd(a).is_ok());
        inodes.forget(a, 1);
        assert_eq!(inodes.fd(a).unwrap_err(), Errno::ESTALE);
        inodes.forget(INodeNo::ROOT, 10);
        assert!(inodes.fd(INodeNo::ROOT).is_ok());
    }
}
