//! The terminal tells the run's story; libraries' log lines go to the run directory's
//! `lockbench.log` (a chaos run once printed 116 `WARN` lines of libraries, 95 of a
//! ZooKeeper client reconnecting, between lockbench's own). `RUST_LOG=debug` makes etcd's gRPC
//! stack (h2, tonic, tower) log every frame, in the coordinator and in its worker processes: none
//! of those lines may reach the terminal, and the log file must have them. lockbench's own lines
//! stay on the terminal (the coordinator's setup client's `zookeeper client connected`), and the
//! worker processes' stderr, their clients' own `connected` lines included, is in the file.

use crate::common;
use std::process::Command;

/// A `tracing` line's target (`2026-... DEBUG h2::codec::framed_write: send frame=...`, after
/// spans such as `Connection{peer=Client}:`), when `line` is one.
fn target(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let _time = words.next()?;
    let level = words.next()?;
    if !["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) {
        return None;
    }
    words.find(|w| !w.contains('{'))?.strip_suffix(':')
}

fn library_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| target(l).is_some_and(|t| !t.starts_with("lockbench")))
        .collect()
}

/// The clients of the run's two worker processes.
const WORKERS: [&str; 2] = ["c0", "c1"];

/// The clients lockbench's ZooKeeper backend says it connected (its own `debug` line).
fn connected(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            target(l) == Some("lockbench_zookeeper::fair")
                && l.contains("zookeeper client connected")
        })
        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("client=")))
        .collect()
}

#[test]
fn library_log_lines_go_to_the_run_log_and_not_to_the_terminal() {
    let dir = common::scratch("logging", "libraries");
    let cluster = common::external_cluster(&dir);
    let run = dir.join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "quick", "--cluster", &cluster, "--out"])
        .arg(&run)
        .args(["--set", "backends=[\"zk-fair\", \"etcd-lease\"]"])
        // 3 s: two worker processes logging every gRPC frame, on a loaded machine, made no
        // etcd acquisition at all in 1 s once.
        .args(["--set", "duration=3s", "--set", "warmup=0s"])
        .args(["--set", common::NO_WARM_UP])
        .args(["--set", "workload.clients=2"])
        .args(["--set", "workload.processes=\"workers\""])
        .env("RUST_LOG", "debug")
        .env_remove("LOCKBENCH_LOG")
        .output()
        .expect("run lockbench");
    assert!(out.status.success(), "{}", common::text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let path = run.join("lockbench.log");
    assert!(
        stderr.contains(&format!(
            "library log lines (and worker processes' stderr) go to {}",
            path.display()
        )),
        "the run does not say where its log is: {}",
        common::text(&out)
    );
    let on_terminal = library_lines(&stderr);
    assert!(
        on_terminal.is_empty(),
        "{} library lines on the terminal, e.g. {:?}",
        on_terminal.len(),
        &on_terminal[..on_terminal.len().min(5)]
    );
    let log = std::fs::read_to_string(&path).expect("lockbench.log");
    let in_file = library_lines(&log);
    assert!(
        in_file.iter().any(|l| target(l).unwrap().starts_with("h2")),
        "no h2 line in {} ({} library lines): RUST_LOG=debug was not applied",
        path.display(),
        in_file.len()
    );
    // lockbench's own lines: the coordinator's on the terminal (and in the file, so it reads
    // in order), the workers' (clients c0 and c1) only in the file, their stderr.
    let terminal = connected(&stderr);
    let file = connected(&log);
    assert!(
        terminal.iter().any(|c| !WORKERS.contains(c)),
        "lockbench's own line (the coordinator's client) is not on the terminal: {}",
        common::text(&out)
    );
    assert!(
        terminal.iter().all(|c| file.contains(c)),
        "the terminal's lockbench lines {terminal:?} are not all in the file {file:?}"
    );
    for worker in WORKERS {
        assert!(
            file.contains(&worker),
            "worker {worker}'s line is not in the file"
        );
        assert!(
            !terminal.contains(&worker),
            "worker {worker}'s line is on the terminal"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
