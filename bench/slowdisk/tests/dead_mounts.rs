//! A mount whose serving process died is found and detached.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Scratch, mount};
use lockbench_slowdisk::{dead_mounts, detach, mounts};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The directory the serving process mounts over (set only in that process).
const CHILD_DIR: &str = "LOCKBENCH_SLOWDISK_TEST_CHILD_DIR";

/// What the serving process prints once its mount is up.
const MOUNTED: &str = "slowdisk-child-mounted";

#[test]
#[ignore = "the serving process of a_dead_mount_is_found_and_detached, which runs it"]
fn serve_then_sleep() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let _mount = mount(Path::new(&dir));
    println!("{MOUNTED}");
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn a_dead_mount_is_found_and_detached() {
    let scratch = Scratch::new("dead");
    let dir = scratch.data_dir(&[("before", "under the mount")]);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "serve_then_sleep", "--ignored", "--nocapture"])
        .env(CHILD_DIR, &dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, output) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match output.recv_timeout(Duration::from_secs(5)) {
            Ok(line) if line.contains(MOUNTED) => break,
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the serving process did not mount; its output: {seen:#?}");
            }
        }
    }
    assert_eq!(mounts(scratch.path()), vec![dir.clone()]);
    assert!(dead_mounts(scratch.path()).is_empty(), "the mount is live");

    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert_eq!(dead_mounts(scratch.path()), vec![dir.clone()]);
    assert_eq!(
        nix::sys::statvfs::statvfs(&dir).unwrap_err(),
        nix::errno::Errno::ENOTCONN
    );

    detach(&dir).unwrap();
    assert!(mounts(scratch.path()).is_empty());
    assert!(dead_mounts(scratch.path()).is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.join("before")).unwrap(),
        "under the mount"
    );
    // Detaching what is not mounted is fine.
    detach(&dir).unwrap();
}

#[test]
fn unmounting_what_was_detached_already_is_fine() {
    let scratch = Scratch::new("detached");
    let dir = scratch.data_dir(&[("kept", "kept")]);
    let mount = mount(&dir);
    std::fs::write(dir.join("through"), "through").unwrap();
    detach(&dir).unwrap();
    assert!(mounts(scratch.path()).is_empty());
    mount.unmount().unwrap();
    assert!(lockbench_slowdisk::control_at(&dir).is_none());
    assert_eq!(
        std::fs::read_to_string(dir.join("through")).unwrap(),
        "through"
    );
}
