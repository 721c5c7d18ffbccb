//! Helpers of the mount tests: a scratch directory, and a mount that fails loudly.
//!
//! The tests mount through the real kernel FUSE: they need root and /dev/fuse, and fail (never
//! skip) without them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use lockbench_slowdisk::{SlowMount, detach, mounts};

/// A fresh directory under the temporary directory, removed (after detaching any mount left
/// in it) on drop.
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "slowdisk-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        // Other users (the ownership test's) must be able to reach the data directory.
        set_mode(&path, 0o755);
        Scratch { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A data directory in the scratch directory, with `files` (name, content) in it.
    pub fn data_dir(&self, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.path.join("data");
        std::fs::create_dir(&dir).unwrap();
        set_mode(&dir, 0o755);
        for (name, content) in files {
            std::fs::write(dir.join(name), content).unwrap();
        }
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for mount in mounts(&self.path) {
            let _ = detach(&mount);
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Mounts the pass-through over `dir`, failing the test with the reason when it cannot.
pub fn mount(dir: &Path) -> SlowMount {
    SlowMount::mount_over(dir).unwrap_or_else(|err| {
        panic!(
            "cannot mount the slow-disk pass-through over {} (these tests need root and \
             /dev/fuse): {err:#}",
            dir.display()
        )
    })
}
