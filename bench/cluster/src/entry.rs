//! Getting inside a host to act from there: entering its network namespace (`setns`, what root
//! on the machine can do), or `docker exec` into its container (what anyone who can talk to the
//! Docker API can do: a user in the `docker` group, or lockbench in a container of its own
//! with the Docker socket mounted).
//!
//! Why both: entering is the fast path (a socket opened in-process, no process started, no
//! round trip through dockerd), but it needs `CAP_SYS_ADMIN` over the machine's namespaces;
//! `docker exec` needs only the Docker API and runs a program inside the container as its root
//! (with the `NET_ADMIN` the compose file grants), so compose-mode faults never need host
//! root. A [`Host`] with [`Host::exec`] set is reached the second way.
//!
//! What faults do inside a host comes down to four things, each with both forms:
//! - firewall rules ([`Host::command`] of `iptables`, `iptables-restore`);
//! - one request and its reply over TCP ([`Host::exchange`]: a server probed from its own
//!   host, which a partition cannot cut);
//! - whether a TCP connect succeeds ([`Host::connects`]: checking a partition took);
//! - UDP datagrams sent from inside ([`Host::send_udp`]: packet loss's probe).
//!
//! Inside a container the last three are bash's `/dev/tcp` and `/dev/udp`, bounded by
//! coreutils' `timeout` (the servers' image and the client image are Debian, with bash,
//! coreutils and iptables); the command lines are built by the `*_args` functions here, which
//! the unit tests check.

use crate::Host;
use anyhow::{Context, bail};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Exit status of the in-container scripts when the connection could not be made (refused or
/// unreachable), told apart from Docker's own failures (`docker exec` exits 1, 125-127).
const NOT_CONNECTED: i32 = 3;
/// `timeout`'s exit status when the time ran out.
const TIMED_OUT: i32 = 124;

/// `docker exec -i -u 0 <container>`: a program after these runs inside `container` as its
/// root, with stdin attached (`iptables-restore` reads its rules from it).
pub fn exec_args(container: &str) -> Vec<String> {
    ["exec", "-i", "-u", "0", container]
        .map(str::to_string)
        .to_vec()
}

/// Seconds for `timeout`, at least a tenth of one.
fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64().max(0.1))
}

/// What runs inside a container for [`Host::exchange`]: connect to `addr` with bash's
/// `/dev/tcp`, copy stdin to the connection (in the background) and the connection to stdout
/// (the script's own process, so it ends when the server closes), all within `timeout`. (Stdin
/// is passed to the background copy as fd 4: bash gives background commands /dev/null.) When
/// stdin closes (the caller closes it once the reply is whole) the copy to stdout is ended too.
pub fn exchange_args(addr: SocketAddr, timeout: Duration) -> Vec<String> {
    let script = format!(
        "exec 3<>/dev/tcp/$0/$1 4<&0 || exit {NOT_CONNECTED}; \
         {{ cat <&4 >&3; kill $$; }} >/dev/null 2>&1 & exec cat <&3 4<&-"
    );
    [
        "timeout".to_string(),
        "-k".into(),
        "1".into(),
        secs(timeout),
        "bash".into(),
        "-c".into(),
        script,
        addr.ip().to_string(),
        addr.port().to_string(),
    ]
    .to_vec()
}

/// What runs inside a container for [`Host::connects`]: exit 0 when a TCP connection to `addr`
/// is made within `timeout`, `NOT_CONNECTED` (refused, unreachable) or 124 (timed out)
/// when not.
pub fn connect_args(addr: SocketAddr, timeout: Duration) -> Vec<String> {
    let script = format!("exec 3<>/dev/tcp/$0/$1 2>/dev/null || exit {NOT_CONNECTED}");
    [
        "timeout".to_string(),
        secs(timeout),
        "bash".into(),
        "-c".into(),
        script,
        addr.ip().to_string(),
        addr.port().to_string(),
    ]
    .to_vec()
}

/// What runs inside a container for [`Host::send_udp`]: `count` rounds of one datagram to
/// `port` of each of `to`; a datagram the local firewall drops fails to send, silently.
pub fn udp_args(to: &[Ipv4Addr], port: u16, count: u64) -> Vec<String> {
    let script = format!(
        "exec 2>/dev/null; n=$0; for ((i = 0; i < n; i++)); do for a in \"$@\"; do \
         printf 'lockbench probe' >/dev/udp/$a/{port}; done; done; exit 0"
    );
    let mut args = vec!["bash".to_string(), "-c".into(), script, count.to_string()];
    args.extend(to.iter().map(|a| a.to_string()));
    args
}

/// `docker exec ... <args>` into `container`.
fn docker_exec(container: &str, args: &[String]) -> Command {
    let mut cmd = Command::new("docker");
    cmd.args(exec_args(container)).args(args);
    cmd
}

/// `true` while Docker says `container` runs.
pub fn container_runs(container: &str) -> bool {
    Command::new("docker")
        .args(["inspect", "--format", "{{.State.Running}}", container])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "true")
}

/// `true` when this process may enter the network namespace at `path` (`/proc/<pid>/ns/net`):
/// it can open it and `setns` into it (tried on a thread of its own, which then ends).
pub fn can_enter(path: &str) -> bool {
    use std::os::fd::AsFd;
    let path = path.to_string();
    std::thread::spawn(move || {
        std::fs::File::open(&path).is_ok_and(|f| {
            nix::sched::setns(f.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).is_ok()
        })
    })
    .join()
    .unwrap_or(false)
}

/// Sends `request` to `addr` from this process's own namespace and reads until EOF or
/// `done(reply)`; `timeout` bounds the connect and each read.
pub fn exchange_here(
    addr: SocketAddr,
    request: &[u8],
    done: fn(&[u8]) -> bool,
    timeout: Duration,
) -> anyhow::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(request)?;
    read_reply(&mut stream, done)
}

/// Reads from `r` until EOF or `done(reply)`.
fn read_reply(r: &mut impl Read, done: fn(&[u8]) -> bool) -> anyhow::Result<Vec<u8>> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 || {
            reply.extend_from_slice(&buf[..n]);
            done(&reply)
        } {
            return Ok(reply);
        }
    }
}

/// Sends `count` rounds of one UDP datagram to `port` of each of `to` from here.
fn send_udp_here(to: &[Ipv4Addr], port: u16, count: u64) -> std::io::Result<()> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    for _ in 0..count {
        for addr in to {
            let _ = socket.send_to(b"lockbench probe", SocketAddr::from((*addr, port)));
        }
    }
    Ok(())
}

impl Host {
    /// Sends `request` to `addr` from inside this host and reads until EOF or `done(reply)`;
    /// `timeout` bounds the connect and each read (inside a container: the whole exchange).
    /// Blocking.
    pub fn exchange(
        &self,
        addr: SocketAddr,
        request: Vec<u8>,
        done: fn(&[u8]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<Vec<u8>> {
        let Some(container) = &self.exec else {
            return self.run_inside(move || exchange_here(addr, &request, done, timeout))?;
        };
        let mut child = docker_exec(container, &exchange_args(addr, timeout))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run docker")?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = child.stdout.take().expect("piped");
        stdin.write_all(&request)?;
        let reply = read_reply(&mut stdout, done);
        // The reply is whole (or the connection ended): closing stdin ends the script (its
        // `timeout` bounds it in any case).
        drop(stdin);
        drop(stdout);
        let out = child.wait_with_output()?;
        let reply = reply?;
        if reply.is_empty() {
            bail!(
                "no reply from {addr} inside {container} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(reply)
    }

    /// `Ok(true)` when a TCP connection from inside this host to `addr` is made within
    /// `timeout`, `Ok(false)` when it is refused, unreachable or times out; `Err` when the
    /// host cannot be entered. Blocking.
    pub fn connects(&self, addr: SocketAddr, timeout: Duration) -> anyhow::Result<bool> {
        let Some(container) = &self.exec else {
            return self.run_inside(move || TcpStream::connect_timeout(&addr, timeout).is_ok());
        };
        let out = docker_exec(container, &connect_args(addr, timeout))
            .stdin(Stdio::null())
            .output()
            .context("cannot run docker")?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(NOT_CONNECTED | TIMED_OUT) => Ok(false),
            _ => bail!(
                "cannot try {addr} from inside {container} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    }

    /// Sends `count` rounds of one UDP datagram to `port` of each of `to` from inside this
    /// host (datagrams its OUTPUT rules drop fail to send; that is a loss probe's point).
    /// Blocking.
    pub fn send_udp(&self, to: Vec<Ipv4Addr>, port: u16, count: u64) -> anyhow::Result<()> {
        let Some(container) = &self.exec else {
            return Ok(self.run_inside(move || send_udp_here(&to, port, count))??);
        };
        let out = docker_exec(container, &udp_args(&to, port, count))
            .stdin(Stdio::null())
            .output()
            .context("cannot run docker")?;
        if !out.status.success() {
            bail!(
                "cannot send datagrams from inside {container} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

/// Sends `count` rounds of one UDP datagram to `port` of each of `to` from `from` (`None`:
/// from this process).
pub fn send_udp(
    from: Option<&Host>,
    to: Vec<Ipv4Addr>,
    port: u16,
    count: u64,
) -> anyhow::Result<()> {
    match from {
        Some(h) => h.send_udp(to, port, count),
        None => Ok(send_udp_here(&to, port, count)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container_host() -> Host {
        Host {
            name: "zk1".into(),
            netns: "/proc/1234/ns/net".into(),
            addr: Ipv4Addr::new(10, 78, 0, 11),
            exec: Some("lockbench-zk1".into()),
        }
    }

    fn words(cmd: &Command) -> Vec<String> {
        std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// Firewall commands of a container host run inside it through `docker exec`, as its root,
    /// with stdin attached; a namespace host's enter the namespace.
    #[test]
    fn a_container_hosts_commands_go_through_docker_exec() {
        let h = container_host();
        let mut cmd = h.command("iptables");
        cmd.args(["-w", "-A", "INPUT", "-s", "10.78.0.1", "-j", "DROP"]);
        assert_eq!(
            words(&cmd),
            "docker exec -i -u 0 lockbench-zk1 iptables -w -A INPUT -s 10.78.0.1 -j DROP"
                .split(' ')
                .collect::<Vec<_>>()
        );
        let ns = Host { exec: None, ..h };
        assert_eq!(
            words(&ns.command("iptables"))[..2],
            ["nsenter", "--net=/proc/1234/ns/net"]
        );
        assert!(
            container_host()
                .run_inside(|| ())
                .unwrap_err()
                .to_string()
                .contains("docker exec lockbench-zk1")
        );
    }

    /// The probes inside a container: bash's /dev/tcp to the address and port given as
    /// arguments (never spliced into the script), bounded by `timeout`; the loss probe's
    /// datagrams to every address, `count` rounds.
    #[test]
    fn the_in_container_probes_are_bash_bounded_by_timeout() {
        let addr: SocketAddr = "10.78.0.11:2181".parse().unwrap();
        let ex = exchange_args(addr, Duration::from_secs(2));
        assert_eq!(ex[..6], ["timeout", "-k", "1", "2.000", "bash", "-c"]);
        assert!(
            ex[6].starts_with("exec 3<>/dev/tcp/$0/$1 4<&0 || exit 3;")
                && ex[6].ends_with("exec cat <&3 4<&-"),
            "{}",
            ex[6]
        );
        assert_eq!(ex[7..], ["10.78.0.11", "2181"]);

        let c = connect_args(addr, Duration::from_millis(1500));
        assert_eq!(c[..4], ["timeout", "1.500", "bash", "-c"]);
        assert_eq!(c[5..], ["10.78.0.11", "2181"]);
        assert!(!c[4].contains("10.78"), "{}", c[4]);

        let to = [Ipv4Addr::new(10, 78, 0, 1), Ipv4Addr::new(10, 78, 0, 101)];
        let u = udp_args(&to, 9, 400);
        assert_eq!(u[..2], ["bash", "-c"]);
        assert!(u[2].contains("/dev/udp/$a/9"), "{}", u[2]);
        assert_eq!(u[3..], ["400", "10.78.0.1", "10.78.0.101"]);
    }

    /// A reply is read until the caller's `done` says it is whole, or the stream ends.
    #[test]
    fn a_reply_ends_when_done_or_at_eof() {
        let mut r: &[u8] = b":1\r\n:2\r\n";
        assert_eq!(
            read_reply(&mut r, |b| b.ends_with(b"\r\n")).unwrap(),
            b":1\r\n:2\r\n"
        );
        let mut r: &[u8] = b"imok";
        assert_eq!(read_reply(&mut r, |_| false).unwrap(), b"imok");
    }
}
