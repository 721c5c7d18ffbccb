//! Server processes: spawning them detached, pid files, recognising our own processes, and
//! stopping them.
//!
//! Servers must outlive the `lockbench` command that started them, so each runs in its own
//! process group (Ctrl-C in the terminal does not reach it) with its output in a log file.
//! For the same reason a server must not keep anything of ours open: every file descriptor
//! beyond 0-2 it would inherit is made close-on-exec between fork and exec. Rust opens its own
//! files close-on-exec, but not what lockbench inherited itself: `flock /tmp/x.lock cargo test`
//! hands its lock's descriptor to every process below it, and a server the chaos nemesis
//! restarted once held such a lock for 50 minutes after the tests ended.
//! Before anything is signalled it is checked to be *ours*: its command line or working
//! directory lies inside its node directory. A recycled pid in a stale pid file therefore never
//! gets an unrelated process killed.

use crate::spec::Command;
use crate::state_dir::NodeDir;
use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs::{self, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Starts `cmd` detached, in `node`'s directory (inside network namespace `netns` when given,
/// through `ip netns exec`, which execs the server so the pid is the server's), output appended
/// to `server.log` (the previous log is kept as `server.log.1`), and records its pid. Returns
/// the pid.
pub(crate) fn spawn(cmd: &Command, node: &NodeDir, netns: Option<&str>) -> anyhow::Result<u32> {
    let log_path = node.log();
    if log_path.exists() {
        let _ = fs::rename(&log_path, node.root.join("server.log.1"));
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let mut command = match netns {
        Some(ns) => {
            let mut c = std::process::Command::new("ip");
            c.args(["netns", "exec", ns]).arg(&cmd.program);
            c
        }
        None => std::process::Command::new(&cmd.program),
    };
    // SAFETY: the closure only makes raw system calls (close_range, fcntl, umask), which are
    // async-signal-safe, between fork and exec; it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            cloexec_inherited();
            // What a server writes is its owner's alone: a secure cluster's Redis and
            // Sentinels rewrite config files that hold a password in clear (`crate::spec`).
            nix::libc::umask(0o077);
            Ok(())
        });
    }
    let mut child = command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&node.root)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", cmd.program.display()))?;
    let pid = child.id();
    fs::write(node.pid_file(), format!("{pid}\n"))?;
    // Reap the child if it exits while this process still runs, so a killed server does not
    // linger as a zombie that still looks alive. When we exit, init adopts it instead.
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// Marks every file descriptor from 3 on close-on-exec, in a child between fork and exec (see
/// the module docs): `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` (Linux 5.11), else `fcntl` on
/// each descriptor below the limit. Close-on-exec rather than closed: the standard library
/// reports a failed `exec` through a close-on-exec pipe of its own, which must stay open
/// until the `exec`.
fn cloexec_inherited() {
    use nix::libc;
    // SAFETY: plain system calls on descriptor numbers; no memory is passed.
    unsafe {
        let flags = libc::CLOSE_RANGE_CLOEXEC as libc::c_uint;
        if libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            flags,
        ) == 0
        {
            return;
        }
        let limit = libc::sysconf(libc::_SC_OPEN_MAX).clamp(3, 1 << 20) as libc::c_int;
        for fd in 3..limit {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// The pid recorded in a pid file, if any.
pub(crate) fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The one-letter state from `/proc/<pid>/stat` (`R`, `S`, `T` stopped, `Z` zombie, ...).
pub(crate) fn state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may contain spaces; the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `true` when the process exists and has not exited (zombies count as exited).
pub(crate) fn is_alive(pid: u32) -> bool {
    state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// `true` when `pid` is a live process started for `node`: its command line mentions the
/// node directory, or it runs inside it (Redis rewrites its command line, not its cwd).
pub(crate) fn is_ours(pid: u32, node: &NodeDir) -> bool {
    if !is_alive(pid) {
        return false;
    }
    let root = node.root.as_os_str().as_encoded_bytes();
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let in_cmdline = cmdline.windows(root.len()).any(|w| w == root);
    let cwd = fs::read_link(format!("/proc/{pid}/cwd")).ok();
    in_cmdline || cwd.is_some_and(|c| c.starts_with(&node.root))
}

/// The pid of the live server of ours recorded in `node`'s pid file.
pub(crate) fn our_pid(node: &NodeDir) -> Option<u32> {
    read_pid(&node.pid_file()).filter(|&pid| is_ours(pid, node))
}

/// Resident set size from `/proc/<pid>/status` (`VmRSS`).
pub(crate) fn rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Stops processes: `SIGTERM` (plus `SIGCONT`, in case a fault left one stopped), then
/// `SIGKILL` for whatever is still alive after `grace`. Waits until all are gone.
pub(crate) async fn terminate(pids: &[u32], grace: Duration) {
    let send = |pid: u32, sig| {
        let _ = kill(Pid::from_raw(pid as i32), sig);
    };
    for &pid in pids {
        send(pid, Signal::SIGTERM);
        send(pid, Signal::SIGCONT);
    }
    let start = Instant::now();
    let mut killed = false;
    while pids.iter().any(|&p| is_alive(p)) {
        if !killed && start.elapsed() >= grace {
            for &pid in pids.iter().filter(|&&p| is_alive(p)) {
                tracing::info!(pid, "server did not stop within {grace:?}; sending SIGKILL");
                send(pid, Signal::SIGKILL);
            }
            killed = true;
        }
        if start.elapsed() >= grace + Duration::from_secs(10) {
            tracing::error!(?pids, "processes survived SIGKILL");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Who listens on a TCP port.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PortUse {
    /// Nobody.
    Free,
    /// This process (found through `/proc/*/fd`).
    Pid(u32),
    /// Someone whose file descriptors we may not read (another user).
    Unknown,
}

/// Finds the process listening on `port` (any address, IPv4 or IPv6) from `/proc/net/tcp*`.
pub(crate) fn port_use(port: u16) -> PortUse {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && f.get(3) == Some(&"0A") {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    if inodes.is_empty() {
        return PortUse::Free;
    }
    let Ok(procs) = fs::read_dir("/proc") else {
        return PortUse::Unknown;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let target = fs::read_link(fd.path()).unwrap_or_default();
            if inodes.iter().any(|i| target.as_os_str() == i.as_str()) {
                return PortUse::Pid(pid);
            }
        }
    }
    PortUse::Unknown
}

/// A process's command line, for error messages.
pub(crate) fn cmdline(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text = String::from_utf8_lossy(&raw).replace('\0', " ");
    let text = text.trim();
    if text.chars().count() > 120 {
        format!("{}...", text.chars().take(120).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_owner_of_a_listening_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(port_use(port), PortUse::Pid(std::process::id()));
        drop(listener);
        assert_eq!(port_use(port), PortUse::Free);
    }

    /// Regression: a restarted server held a `flock` descriptor lockbench had inherited (from
    /// `flock /tmp/lb-heavy.lock cargo ...`) for 50 minutes. A descriptor this process holds
    /// without close-on-exec must not reach a spawned server.
    #[test]
    fn a_spawned_server_inherits_no_descriptor_beyond_stdio() {
        use std::os::fd::AsRawFd;
        let dir = std::env::temp_dir().join(format!("lb-fd-test-{}", std::process::id()));
        let node = NodeDir::new(&dir, "srv");
        fs::create_dir_all(&node.root).unwrap();
        let held = dir.join("held.lock");
        let file = fs::File::create(&held).unwrap();
        // What flock(1) hands down: a descriptor without close-on-exec.
        nix::fcntl::fcntl(
            &file,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .unwrap();
        let cmd = crate::spec::Command {
            program: "sleep".into(),
            args: vec!["30".into()],
            env: Vec::new(),
        };
        let pid = spawn(&cmd, &node, None).unwrap();
        let fds: Vec<std::path::PathBuf> = fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .filter_map(|e| fs::read_link(e.path()).ok())
            .collect();
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let _ = fs::remove_dir_all(&dir);
        assert!(file.as_raw_fd() > 2);
        assert!(
            !fds.iter().any(|f| f == &held),
            "the server inherited {} (its descriptors: {fds:?})",
            held.display()
        );
    }

    #[test]
    fn our_own_process_is_alive_and_has_rss() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(rss_bytes(me).unwrap() > 0);
    }
}
