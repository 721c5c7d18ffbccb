//! This filesystem's mounts as the kernel lists them, the dead ones among them, and detaching.
//!
//! A mount outlives the process that served it: when lockbench dies (a crash, a SIGKILL) the
//! mount stays, and every access to it fails with `ENOTCONN` until it is detached. The cleanup
//! after a crashed run finds such mounts here and detaches them.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use nix::errno::Errno;
use nix::mount::MntFlags;

/// The mount's source (`fsname`).
pub(crate) const FS_NAME: &str = "lockbench-slowdisk";

/// The mount's type as the kernel shows it (`fuse.` and the subtype).
const FS_TYPE: &str = "fuse.lockbench-slowdisk";

/// Mounts of this filesystem (fs type `fuse.lockbench-slowdisk` or source `lockbench-slowdisk`
/// as `/proc/self/mountinfo` shows it) at or below `under` whose serving process is gone: a
/// `stat` of the mount point fails with `ENOTCONN` ("Transport endpoint is not connected").
///
/// The check is a `statfs`, which the kernel always forwards, where a `stat` may be answered
/// from the attributes the kernel cached (for a second) before the process died.
pub fn dead_mounts(under: &Path) -> Vec<PathBuf> {
    mounts(under)
        .into_iter()
        .filter(|path| {
            matches!(nix::sys::statvfs::statvfs(path), Err(Errno::ENOTCONN))
                || matches!(nix::sys::stat::lstat(path), Err(Errno::ENOTCONN))
        })
        .collect()
}

/// Every mount of this filesystem at or below `under` (live or dead), each once, in the
/// kernel's order.
pub fn mounts(under: &Path) -> Vec<PathBuf> {
    let under = resolved(under);
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = Vec::new();
    for path in table.lines().filter_map(ours) {
        if path.starts_with(&under) && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// Detaches the mount at `path` (`umount2` with `MNT_DETACH`): it disappears from the tree at
/// once, and the kernel lets it go when the last file open on it is closed. Ok when `path` is
/// not a mount point (or does not exist).
pub fn detach(path: &Path) -> anyhow::Result<()> {
    match nix::mount::umount2(path, MntFlags::MNT_DETACH) {
        Ok(()) | Err(Errno::EINVAL) | Err(Errno::ENOENT) => Ok(()),
        Err(err) => Err(anyhow!(
            "detaching the mount at {} (umount2 MNT_DETACH): {err}{}",
            path.display(),
            if err == Errno::EPERM {
                "; detaching a mount needs root (CAP_SYS_ADMIN)"
            } else {
                ""
            }
        )),
    }
}

/// The mount point of a mountinfo line when the mount is this filesystem's.
fn ours(line: &str) -> Option<PathBuf> {
    // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
    // the mount point is the fifth field; after the " - " come the type and the source.
    let (mount, fs) = line.split_once(" - ")?;
    let mount_point = mount.split(' ').nth(4)?;
    let mut fs = fs.split(' ');
    let (fs_type, source) = (fs.next()?, fs.next()?);
    let is_ours = fs_type == FS_TYPE
        || (fs_type.starts_with("fuse") && unescape(source) == FS_NAME.as_bytes());
    is_ours.then(|| PathBuf::from(OsString::from_vec(unescape(mount_point))))
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes.get(at + 1..at + 4).filter(|digits| {
            bytes[at] == b'\\' && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        });
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
                out.push(value as u8);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    out
}

/// `path` made absolute and resolved. A dead mount point cannot be resolved itself (its `stat`
/// fails), so its parent is resolved instead.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => match parent.canonicalize() {
            Ok(parent) => parent.join(name),
            Err(_) => absolute,
        },
        _ => absolute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_its_mounts_and_unescapes_the_path() {
        let line = "812 27 0:93 / /tmp/data\\040dir rw,nosuid,nodev,relatime shared:434 - \
                    fuse.lockbench-slowdisk lockbench-slowdisk rw,user_id=0,group_id=0";
        assert_eq!(ours(line), Some(PathBuf::from("/tmp/data dir")));
        let by_source = "812 27 0:93 / /srv/pg rw - fuse lockbench-slowdisk rw,user_id=0";
        assert_eq!(ours(by_source), Some(PathBuf::from("/srv/pg")));
        let other = "30 27 0:25 / /run/user/0/doc rw - fuse.portal portal rw,user_id=0";
        assert_eq!(ours(other), None);
        let ext4 = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw";
        assert_eq!(ours(ext4), None);
    }

    #[test]
    fn detach_of_a_plain_directory_is_ok() {
        let dir = std::env::temp_dir().join(format!("slowdisk-detach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        detach(&dir).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        detach(Path::new("/nonexistent/lockbench-slowdisk")).unwrap();
    }
}
