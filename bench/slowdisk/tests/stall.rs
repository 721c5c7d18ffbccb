//! A stall delays or holds writes and syncs, never reads.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Scratch, mount};
use lockbench_slowdisk::{Stall, mounts};

#[test]
fn a_delay_slows_fsync_but_not_a_read() {
    let scratch = Scratch::new("delay");
    let dir = scratch.data_dir(&[("other", "read while the fsync waits")]);
    let mount = mount(&dir);
    let control = mount.control();
    let mut wal = File::create(dir.join("wal")).unwrap();
    wal.write_all(b"entry").unwrap();
    let before = control.stalled_ops();

    control.set(Stall::Delay(Duration::from_millis(200)));
    let fsync = std::thread::spawn(move || {
        let start = Instant::now();
        wal.sync_all().unwrap();
        start.elapsed()
    });
    std::thread::sleep(Duration::from_millis(30));
    let start = Instant::now();
    let other = fs::read_to_string(dir.join("other")).unwrap();
    let read_took = start.elapsed();
    assert_eq!(other, "read while the fsync waits");
    assert!(
        read_took < Duration::from_millis(100),
        "read took {read_took:?}"
    );
    let fsync_took = fsync.join().unwrap();
    assert!(
        fsync_took >= Duration::from_millis(200),
        "fsync took {fsync_took:?}"
    );
    assert!(
        fsync_took < Duration::from_secs(2),
        "fsync took {fsync_took:?}"
    );
    assert!(control.stalled_ops() > before, "{control:?}");
    mount.unmount().unwrap();
}

#[test]
fn a_freeze_holds_writes_until_released() {
    let scratch = Scratch::new("freeze");
    let dir = scratch.data_dir(&[("frozen", ""), ("other", "readable")]);
    // The real directory, reached past the mount, to see when the data lands.
    let backing = File::open(&dir).unwrap();
    let backing_file = format!("/proc/self/fd/{}/frozen", backing.as_raw_fd());
    let mount = mount(&dir);
    let control = mount.control();

    control.set(Stall::Freeze);
    let (done, finished) = mpsc::channel();
    let path = dir.join("frozen");
    let writer = std::thread::spawn(move || {
        let mut file = OpenOptions::new().write(true).open(path).unwrap();
        file.write_all(b"written during the freeze").unwrap();
        file.sync_all().unwrap();
        done.send(()).unwrap();
    });
    assert!(
        finished.recv_timeout(Duration::from_millis(300)).is_err(),
        "the write and fsync returned during the freeze"
    );
    // Reads and attributes go on meanwhile.
    let start = Instant::now();
    assert_eq!(fs::read_to_string(dir.join("other")).unwrap(), "readable");
    assert_eq!(fs::metadata(dir.join("frozen")).unwrap().len(), 0);
    assert!(start.elapsed() < Duration::from_millis(100));
    assert_eq!(fs::read_to_string(&backing_file).unwrap(), "");
    assert!(control.stalled_ops() >= 1, "{control:?}");

    control.set(Stall::None);
    finished
        .recv_timeout(Duration::from_secs(1))
        .expect("the write and fsync return once the freeze is lifted");
    writer.join().unwrap();
    assert_eq!(
        fs::read_to_string(&backing_file).unwrap(),
        "written during the freeze"
    );
    mount.unmount().unwrap();
}

#[test]
fn unmount_releases_held_writes_and_detaches_a_busy_mount() {
    let scratch = Scratch::new("busy");
    let dir = scratch.data_dir(&[("held", "")]);
    let backing = File::open(&dir).unwrap();
    let backing_file = format!("/proc/self/fd/{}/held", backing.as_raw_fd());
    let mount = mount(&dir);
    let control = mount.control();
    // A server that keeps a file open: the mount is busy.
    let mut open = OpenOptions::new()
        .write(true)
        .open(dir.join("held"))
        .unwrap();

    control.set(Stall::Freeze);
    let (done, finished) = mpsc::channel();
    let path = dir.join("held");
    std::thread::spawn(move || {
        let mut file = OpenOptions::new().append(true).open(path).unwrap();
        let written = file.write_all(b"held;");
        done.send(written.map_err(|err| err.to_string())).unwrap();
    });
    assert!(finished.recv_timeout(Duration::from_millis(200)).is_err());

    let start = Instant::now();
    mount.unmount().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    finished
        .recv_timeout(Duration::from_secs(1))
        .unwrap()
        .unwrap();
    assert_eq!(fs::read_to_string(&backing_file).unwrap(), "held;");
    assert!(mounts(scratch.path()).is_empty(), "detached");
    // The file still open is served after the detach, without a stall.
    control.set(Stall::Freeze);
    open.write_all(b"after").unwrap();
    drop(open);
    assert_eq!(fs::read_to_string(&backing_file).unwrap(), "after");
}
