//! A slow or stalled disk under a managed server: a FUSE pass-through mounted over the server's
//! data directory, whose writes and syncs a fault can delay or freeze.
//!
//! Why: a stalled fsync is etcd's and ZooKeeper's most common production trouble. A leader
//! whose WAL fsync takes seconds misses heartbeats and loses its leadership, or keeps it while
//! every write waits; a lock service's behaviour then is what a benchmark of it should show.
//! [`Stall::Delay`] makes every write-side operation (write, fsync, fsyncdir, fallocate,
//! truncate, create, mkdir, unlink, rename) take a fixed extra time; [`Stall::Freeze`] holds
//! them until the stall is lifted, like a disk that stopped answering. Reads, lookups,
//! attributes and listings are never held.
//!
//! A pass-through costs something even when idle (every write and fsync crosses to this
//! process and back), so it is mounted only for runs with a disk fault.
//!
//! Why mount over the directory rather than somewhere else: the server's configuration names
//! its data directory, and that configuration stays as it is. The mount hides the real
//! directory under the same path, and the pass-through reaches the real files through a
//! descriptor on the directory opened before the mount.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use lockbench_slowdisk::{SlowMount, Stall};
//! use std::time::Duration;
//!
//! let mount = SlowMount::mount_over(std::path::Path::new("/var/lib/lockbench/etcd-1"))?;
//! let disk = mount.control();
//! disk.set(Stall::Delay(Duration::from_millis(500)));
//! // ... the run ...
//! disk.set(Stall::None);
//! assert!(disk.stalled_ops() > 0, "the server wrote nothing during the fault");
//! mount.unmount()?;
//! # Ok(())
//! # }
//! ```
//!
//! How a stall shows, beyond the operation held:
//!
//! - A stall holds the `write` call itself, not only the sync: a server's write-then-fsync takes
//!   twice a [`Stall::Delay`] (a local disk would take the write into its page cache at once).
//! - The kernel keeps its locks while it waits for an answer: a held write holds its file's
//!   lock (other writes to that file wait, reads do not), and a held create, mkdir, unlink or
//!   rename holds its directory's (listing that directory and looking up names not yet cached
//!   in it wait).
//! - A process waiting for a frozen operation cannot be killed (it waits uninterruptibly, as on
//!   a stalled local disk): lift the stall ([`DiskControl::set`] with [`Stall::None`], or drop the
//!   mount) before killing the server.
//! - The mount is made in this process's mount namespace. A server in a namespace unshared
//!   before the mount (and not receiving mount propagation) does not see it; one started after
//!   the mount sees a copy, which the session goes on serving after the unmount here.
//!
//! What the pass-through does not pass: extended attributes (answered `ENOSYS`); `O_DIRECT` is
//! accepted, but the backing file is written through its page cache (an fsync still syncs it);
//! POSIX and BSD locks are kept by the kernel for the mount (they work between the processes
//! that use the mount, as on a local filesystem); the kernel keeps its page cache of a file
//! across opens (right, as the backing files change only through the mount).

#![deny(missing_docs)]

mod backing;
mod control;
mod handles;
mod inodes;
mod mountinfo;
mod mounts;
mod ops;
mod passthrough;

pub use control::{DiskControl, Stall};
pub use mountinfo::{dead_mounts, detach, mounts};
pub use mounts::{SlowMount, control_at, preflight};
