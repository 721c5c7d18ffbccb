//! Real clock faults on managed servers: lockbench's clock shim and each server's clock file.
//!
//! Why a shim of its own: the `clock` fault shifts a server's wall clock for real, without
//! touching the machine's. libfaketime would do it, but crashes Debian's Redis at start-up (its
//! configuration is read through stdio, which allocates, while Redis's allocator reads the
//! clock). `shim/clock.c` allocates nothing: preloaded into every managed server (set by
//! `preload` on each spawn), it adds the shift stored in the server's clock file
//! (`<state>/cluster/<name>/clock`) to every wall-clock read made through the C library,
//! and counts those reads in the same file. The count is how a fault is *seen*: a server that
//! made no shifted read (a Go runtime reads the kernel's clock without the C library) shows
//! that the shift did not reach it. With the shift at zero the shim costs a function call and
//! one load per clock read.
//!
//! The file is 32 bytes, mapped shared by the shim and by [`ClockFile`], four little-endian
//! 64-bit words: a signed shift in nanoseconds, the count of shifted reads, a drift in parts
//! per million, and the true wall-clock time in nanoseconds the drift counts from.

use anyhow::Context;
use std::fs::OpenOptions;
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI64, Ordering};

/// The shim, built from `shim/clock.c` by the crate's build script.
const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/liblockbench-clock.so"));

/// The clock file's size: the shift, the count of shifted reads, the drift and its start.
const FILE_LEN: usize = 32;

/// Where the shim lives in a state directory.
fn shim_path(state_dir: &Path) -> PathBuf {
    state_dir.join("lib").join("liblockbench-clock.so")
}

/// The environment that makes a server's processes read their clock through the shim and
/// `clock_file`: writes the shim into the state directory (replacing it by a rename, so a
/// running server's mapping is never rewritten) and creates the clock file at no shift
/// if it is missing. `None`, with a warning, where the shim cannot be loaded (a path with a
/// space or a colon, which `LD_PRELOAD` splits at): the server then runs without it and
/// clock faults on it are recorded as not applied.
pub(crate) fn preload(
    state_dir: &Path,
    clock_file: &Path,
) -> anyhow::Result<Option<Vec<(String, PathBuf)>>> {
    let shim = shim_path(state_dir);
    if shim.to_string_lossy().contains([' ', ':']) {
        tracing::warn!(
            path = %shim.display(),
            "the clock shim cannot be preloaded from a path with a space or a colon; clock faults will not apply"
        );
        return Ok(None);
    }
    install(&shim)?;
    if !clock_file.exists() {
        std::fs::write(clock_file, [0u8; FILE_LEN])
            .with_context(|| format!("cannot write {}", clock_file.display()))?;
    }
    ClockFile::open(clock_file)?; // a shorter file of an older shim is made whole
    Ok(Some(vec![
        ("LD_PRELOAD".into(), shim),
        ("LOCKBENCH_CLOCK_FILE".into(), clock_file.to_path_buf()),
    ]))
}

/// Writes the shim to `path` unless it is there already, by a rename.
fn install(path: &Path) -> anyhow::Result<()> {
    if std::fs::read(path).is_ok_and(|b| b == SHIM) {
        return Ok(());
    }
    let dir = path.parent().expect("the shim's path has a directory");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".clock-shim.{}", std::process::id()));
    std::fs::write(&tmp, SHIM).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// A server's clock file, mapped: set its shift, read how many clock reads it shifted.
pub struct ClockFile {
    map: NonNull<std::ffi::c_void>,
}

// SAFETY: the mapping is only read and written through atomics.
unsafe impl Send for ClockFile {}
// SAFETY: as above.
unsafe impl Sync for ClockFile {}

impl ClockFile {
    /// Maps the clock file at `path` (a server started with the shim has one).
    pub fn open(path: &Path) -> anyhow::Result<ClockFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open the clock file {}", path.display()))?;
        if file.metadata()?.len() < FILE_LEN as u64 {
            file.set_len(FILE_LEN as u64)
                .with_context(|| format!("cannot extend the clock file {}", path.display()))?;
        }
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        // SAFETY: a fresh shared mapping of a file we opened, of the length it has at least;
        // only ever accessed through aligned atomics.
        let map = unsafe {
            mmap(
                None,
                NonZeroUsize::new(FILE_LEN).expect("not zero"),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                file.as_fd(),
                0,
            )
        }
        .with_context(|| format!("cannot map the clock file {}", path.display()))?;
        Ok(ClockFile { map })
    }

    /// The 64-bit word at byte `8 * index` of the mapping.
    fn word(&self, index: usize) -> &AtomicI64 {
        assert!(index < FILE_LEN / 8);
        // SAFETY: the mapping is page-aligned and FILE_LEN bytes long, so every word is
        // aligned and inside it; it lives as long as `self`.
        unsafe { &*((self.map.as_ptr() as *const AtomicI64).add(index)) }
    }

    /// Moves the clock: `shift_nanos` at once, then `drift_ppm` of every second from now on
    /// (0 and 0: the true clock). The drift's start is written before its rate, which the shim
    /// reads first.
    pub fn set(&self, shift_nanos: i64, drift_ppm: i64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        self.word(DRIFT_PPM).store(0, Ordering::SeqCst);
        self.word(SHIFT).store(shift_nanos, Ordering::SeqCst);
        self.word(DRIFT_SINCE).store(now, Ordering::SeqCst);
        self.word(DRIFT_PPM).store(drift_ppm, Ordering::SeqCst);
    }

    /// `true` while the clock is moved (a shift or a drift in effect).
    pub fn is_moved(&self) -> bool {
        self.word(SHIFT).load(Ordering::SeqCst) != 0
            || self.word(DRIFT_PPM).load(Ordering::SeqCst) != 0
    }

    /// How many clock reads the shim has moved since the file was made.
    pub fn shifted_reads(&self) -> u64 {
        self.word(READS).load(Ordering::SeqCst) as u64
    }
}

/// The words of the clock file, by index.
const SHIFT: usize = 0;
const READS: usize = 1;
const DRIFT_PPM: usize = 2;
const DRIFT_SINCE: usize = 3;

impl Drop for ClockFile {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `open` made; nothing borrows it past `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.map, FILE_LEN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process started with the shim reads its wall clock shifted by the file's shift, the
    /// shim counts those reads, and its monotonic clock is left alone.
    #[test]
    fn a_process_under_the_shim_reads_the_shifted_clock_and_counts_it() {
        let dir = std::env::temp_dir().join(format!("lockbench-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("clock");
        let env = preload(&dir, &file).unwrap().expect("a plain path");
        let clock = ClockFile::open(&file).unwrap();
        let date = |clock: &ClockFile| {
            let before = clock.shifted_reads();
            let out = std::process::Command::new("date")
                .arg("+%s")
                .envs(env.iter().map(|(k, v)| (k, v)))
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let secs: i64 = String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            (secs, clock.shifted_reads() - before)
        };
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
        };
        let (plain, counted) = date(&clock);
        assert!((plain - now()).abs() <= 1, "{plain} against {}", now());
        assert_eq!(counted, 0, "no shift, nothing counted");
        clock.set(-3_600_000_000_000, 0);
        let (shifted, counted) = date(&clock);
        assert!((shifted - (now() - 3600)).abs() <= 1, "{shifted}");
        assert!(counted >= 1, "the shifted read was counted");
        // Running twice as fast from now on: an hour's drift would take an hour; the start
        // is set to an hour ago to see it at once.
        clock.set(0, 1_000_000);
        clock
            .word(DRIFT_SINCE)
            .fetch_sub(3_600_000_000_000, Ordering::SeqCst);
        let (drifted, _) = date(&clock);
        assert!((drifted - (now() + 3600)).abs() <= 1, "{drifted}");
        clock.set(0, 0);
        assert!(!clock.is_moved());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
