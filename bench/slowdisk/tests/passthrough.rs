//! The pass-through passes a database's operations on its data directory to the real one.

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use common::{Scratch, mount, set_mode};
use lockbench_slowdisk::{Stall, control_at, mounts};

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn changes_through_the_mount_land_in_the_backing_directory() {
    let scratch = Scratch::new("passthrough");
    let dir = scratch.data_dir(&[
        ("old.txt", "before"),
        ("victim", "to be replaced"),
        ("gone", "unlinked through the mount"),
        ("keep", "chmod through the mount"),
    ]);
    let mount = mount(&dir);
    assert_eq!(mounts(scratch.path()), vec![dir.clone()]);
    assert!(control_at(&dir).is_some());

    // The content that was there before the mount is read through it.
    assert_eq!(fs::read_to_string(dir.join("old.txt")).unwrap(), "before");

    // create, write, fsync
    let mut file = File::create(dir.join("new.txt")).unwrap();
    file.write_all(b"hello").unwrap();
    file.sync_all().unwrap();
    drop(file);
    // rename over an existing file, link, symlink
    fs::rename(dir.join("new.txt"), dir.join("victim")).unwrap();
    fs::hard_link(dir.join("victim"), dir.join("victim.link")).unwrap();
    std::os::unix::fs::symlink("victim", dir.join("sym")).unwrap();
    assert_eq!(fs::read_link(dir.join("sym")).unwrap(), Path::new("victim"));
    assert_eq!(fs::read_to_string(dir.join("sym")).unwrap(), "hello");
    // mkdir, and a file in it
    fs::create_dir(dir.join("sub")).unwrap();
    fs::write(dir.join("sub/inner"), "inner").unwrap();
    // truncate (by path and through an open file), unlink, chmod
    OpenOptions::new()
        .write(true)
        .open(dir.join("old.txt"))
        .unwrap()
        .set_len(3)
        .unwrap();
    fs::remove_file(dir.join("gone")).unwrap();
    set_mode(&dir.join("keep"), 0o600);
    // An append goes at the end.
    let mut log = OpenOptions::new()
        .append(true)
        .open(dir.join("sub/inner"))
        .unwrap();
    log.write_all(b"+more").unwrap();
    drop(log);

    let expected = ["keep", "old.txt", "sub", "sym", "victim", "victim.link"];
    assert_eq!(listing(&dir), expected);
    let through = fs::metadata(dir.join("victim")).unwrap();
    assert_eq!(through.nlink(), 2);
    assert_eq!(
        through.ino(),
        fs::metadata(dir.join("victim.link")).unwrap().ino()
    );
    assert_eq!(
        fs::metadata(dir.join("keep")).unwrap().permissions().mode() & 0o7777,
        0o600
    );

    let control = mount.control();
    assert!(control.ops() >= 8, "{control:?}");
    assert_eq!(control.stalled_ops(), 0);
    assert_eq!(control.stall(), Stall::None);

    mount.unmount().unwrap();
    assert!(mounts(scratch.path()).is_empty());
    assert!(control_at(&dir).is_none());

    // The backing directory shows exactly those changes.
    assert_eq!(listing(&dir), expected);
    assert_eq!(fs::read_to_string(dir.join("old.txt")).unwrap(), "bef");
    assert_eq!(fs::read_to_string(dir.join("victim")).unwrap(), "hello");
    let victim = fs::metadata(dir.join("victim")).unwrap();
    let link = fs::metadata(dir.join("victim.link")).unwrap();
    assert_eq!((victim.ino(), victim.nlink()), (link.ino(), 2));
    assert_eq!(fs::read_link(dir.join("sym")).unwrap(), Path::new("victim"));
    assert_eq!(
        fs::read_to_string(dir.join("sub/inner")).unwrap(),
        "inner+more"
    );
    assert_eq!(
        fs::metadata(dir.join("keep")).unwrap().permissions().mode() & 0o7777,
        0o600
    );
    assert_eq!(
        fs::read_to_string(dir.join("keep")).unwrap(),
        "chmod through the mount"
    );
}

#[test]
fn renamed_and_unlinked_open_files_keep_working() {
    let scratch = Scratch::new("renames");
    let dir = scratch.data_dir(&[]);
    fs::create_dir(dir.join("wal")).unwrap();
    let mount = mount(&dir);

    // etcd's WAL: a segment written as a temporary file, renamed, then written on.
    let mut segment = File::create(dir.join("wal/0.tmp")).unwrap();
    segment.write_all(b"first;").unwrap();
    fs::rename(dir.join("wal/0.tmp"), dir.join("wal/0.wal")).unwrap();
    segment.write_all(b"second;").unwrap();
    segment.sync_data().unwrap();
    // The directory above it renamed too.
    fs::rename(dir.join("wal"), dir.join("member")).unwrap();
    segment.write_all(b"third").unwrap();
    segment.sync_all().unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("member/0.wal")).unwrap(),
        "first;second;third"
    );
    drop(segment);

    // An unlinked file stays readable and writable through its open descriptor.
    let mut doomed = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join("doomed"))
        .unwrap();
    doomed.write_all(b"still here").unwrap();
    fs::remove_file(dir.join("doomed")).unwrap();
    doomed.seek(SeekFrom::Start(0)).unwrap();
    let mut back = String::new();
    doomed.read_to_string(&mut back).unwrap();
    assert_eq!(back, "still here");
    assert_eq!(doomed.metadata().unwrap().len(), 10);
    drop(doomed);

    // PostgreSQL's durable_rename: fsync the file, rename, fsync the directory.
    fs::write(dir.join("postmaster.opts.tmp"), "opts").unwrap();
    File::open(dir.join("postmaster.opts.tmp"))
        .unwrap()
        .sync_all()
        .unwrap();
    fs::rename(dir.join("postmaster.opts.tmp"), dir.join("postmaster.opts")).unwrap();
    File::open(&dir).unwrap().sync_all().unwrap();

    mount.unmount().unwrap();
    assert_eq!(listing(&dir), ["member", "postmaster.opts"]);
    assert_eq!(
        fs::read_to_string(dir.join("member/0.wal")).unwrap(),
        "first;second;third"
    );
}

#[test]
fn files_created_by_another_user_are_that_users() {
    let scratch = Scratch::new("owner");
    let dir = scratch.data_dir(&[]);
    let mount = mount(&dir);
    fs::create_dir(dir.join("sub")).unwrap();
    set_mode(&dir.join("sub"), 0o777);

    let sub = dir.join("sub");
    let script = format!(
        "umask 022 && echo x > '{sub}/f' && mkdir '{sub}/d' && ln -s f '{sub}/l'",
        sub = sub.display()
    );
    let status = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(&script)
        .status()
        .expect("setpriv (util-linux) runs");
    assert!(status.success(), "creating as uid 65534: {status}");
    // The kernel checks permissions: that user may not write in the root's 0755 directory.
    let denied = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(format!("echo x > '{}/denied' 2>/dev/null", dir.display()))
        .status()
        .unwrap();
    assert!(!denied.success());
    mount.unmount().unwrap();

    let file = fs::metadata(sub.join("f")).unwrap();
    assert_eq!((file.uid(), file.gid()), (65534, 65534));
    assert_eq!(file.mode() & 0o7777, 0o644);
    let made = fs::metadata(sub.join("d")).unwrap();
    assert_eq!((made.uid(), made.gid()), (65534, 65534));
    assert_eq!(made.mode() & 0o7777, 0o755);
    let link = fs::symlink_metadata(sub.join("l")).unwrap();
    assert_eq!((link.uid(), link.gid()), (65534, 65534));
    assert!(!dir.join("denied").exists());
    // What root created through the mount stays root's.
    assert_eq!(fs::metadata(&sub).unwrap().uid(), 0);
}
