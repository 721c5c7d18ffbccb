//! Client containers: in compose mode, the worker processes a fault must stop or cut off (the
//! fencing holder, failover candidates, every client with `workload.processes = "workers"`)
//! run as containers of their own on the compose network, so a client pause or partition hits
//! a real separate host, as client hosts do in the managed netns topology.
//!
//! Why this shape:
//! - **Same name, same address as a managed client host.** Worker `client<N>` runs in container
//!   `lockbench-client<N>` at `.(100+N)` of the compose subnet (a managed client host's octet),
//!   so `isolate = { nodes = ["client1"] }` names the same worker in both modes and the chaos
//!   site ([`Containers`](crate::Containers)) puts the partition rules inside that container's
//!   network namespace.
//! - **The host's own binary, no image of its own.** The container runs the servers' image
//!   (Debian bookworm, as the host) with the running `lockbench` bind-mounted read-only: no
//!   build step, and the worker is exactly the coordinator's code. The coordinator talks to it
//!   over the attached stdin/stdout of `docker run -i` (the worker protocol is unchanged), and
//!   the resource service and link proxies listen on the compose bridge's address (`.1`),
//!   which the containers reach through the host's INPUT chain: no root firewall rule is added.
//! - **The worker is the container's only process**, so the coordinator stops, resumes and
//!   kills it by its pid in the host's pid namespace ([`host_pid`]), with the same signals and
//!   at the same instant as a managed worker (the fencing pause starts right after the grant;
//!   a `docker pause` takes a round trip through dockerd). `pause` through the chaos site
//!   (`client<N>` as a node target of the server nemesis) is `docker pause`.
//! - **Nothing outlives the run.** `docker run --rm`; the `docker` client is the coordinator's
//!   child with `PR_SET_PDEATHSIG`, and the container's stdin closes when it dies (`-i` attaches
//!   once), which stops the worker. Every container carries the [`LABEL`], and the run removes
//!   them all at its end ([`remove_all`]). A worker that is stopped (SIGSTOP) or paused when
//!   the coordinator dies by `kill -9` never reads that end of file, so its container stays:
//!   the next compose run removes it before it starts (`docker rm -f` kills a stopped
//!   process and unpauses a paused container first), whatever its scenario.
//! - **One such run at a time on a machine.** Container names and addresses are the Docker
//!   Engine's, one set per machine whatever the state directory, so a second run would take
//!   the first one's containers (and remove them as leftovers). A run with client containers
//!   or faults holds [`lock_file`] throughout (`flock`, as the managed cluster's fault-run
//!   lock; the kernel releases it when the run dies, even by `kill -9`).

use crate::file::{IMAGE, NETWORK, container, topology};
use lockbench_chaos::Host;
use lockbench_cluster::SERVERS;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The label every client container carries (value: the worker's name, `client<N>`).
pub const LABEL: &str = "lockbench.client";
/// A managed client host's last octet is 100 + N; the same here.
const CLIENT_BASE: u32 = 100;
/// Where the host's `lockbench` is mounted inside the container.
const BINARY: &str = "/usr/local/bin/lockbench";
/// How long a started container gets to show its process.
const START_BUDGET: Duration = Duration::from_secs(30);

/// The compose runs' lock: `/run/lock/lockbench-compose.lock` (else in the temp directory),
/// one per machine as the containers' names are. Held by a run with client containers or
/// faults for its whole length ([`lockbench_cluster::lock_path`]); a run that finds it free
/// may remove what a dead run left.
pub fn lock_file() -> PathBuf {
    let run_lock = Path::new("/run/lock");
    let dir = if run_lock.is_dir() {
        run_lock.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join("lockbench-compose.lock")
}

/// The address of client container `client<n>` (1-based).
pub fn address(n: u32) -> Ipv4Addr {
    let net = topology();
    let cfg = net.net().expect("the compose topology has a subnet");
    cfg.addr((CLIENT_BASE + n) as u8)
}

/// The coordinator's address on the compose network: where the client containers reach its
/// resource service and link proxies, and where its own packets come from at the servers.
/// On the machine that is the compose bridge's address (`.1`); in a container of its own on
/// the compose network (the `lockbench` service) it is that container's address. Asked of
/// the kernel: the source address of a route to a server's container address (a connected
/// UDP socket; nothing is sent).
pub fn coordinator_address() -> Ipv4Addr {
    let net = topology();
    let cfg = net.net().expect("the compose topology has a subnet");
    let server = SERVERS.first().map(|s| net.ip(s));
    let source = server.and_then(|ip| {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect((ip, 9)).ok()?;
        match socket.local_addr().ok()?.ip() {
            std::net::IpAddr::V4(a) => Some(a),
            std::net::IpAddr::V6(_) => None,
        }
    });
    source
        .filter(|a| cfg.contains(*a))
        .unwrap_or_else(|| cfg.bridge_addr())
}

/// The image the client containers run: `LOCKBENCH_CLIENT_IMAGE`, else the servers' image
/// (any image with a glibc at least as new as the host's does).
pub fn image() -> String {
    std::env::var("LOCKBENCH_CLIENT_IMAGE").unwrap_or_else(|_| IMAGE.to_string())
}

/// `LOCKBENCH_CLIENT_BINARY=in-image`: the client image has lockbench at `BINARY` already
/// (the lockbench image, which the `lockbench` service runs), so the running binary is not
/// bind-mounted: from a container, its path is not the machine's, where Docker looks for it.
pub const BINARY_ENV: &str = "LOCKBENCH_CLIENT_BINARY";

/// `true` when the client image brings its own lockbench ([`BINARY_ENV`]).
fn binary_in_image() -> bool {
    std::env::var(BINARY_ENV).is_ok_and(|v| v == "in-image")
}

/// `docker run` of `exe` (this `lockbench`) as client container `client<n>`, attached to
/// stdin/stdout; the caller adds the subcommand (`worker`). Remove a container of the same
/// name first ([`remove`]).
pub fn command(n: u32, exe: &Path) -> Command {
    let name = format!("client{n}");
    let mut cmd = Command::new("docker");
    cmd.args(["run", "--rm", "-i", "--name", &container(&name)])
        .args(["--label", &format!("{LABEL}={name}")])
        .args(["--network", NETWORK, "--ip", &address(n).to_string()])
        .args(["--hostname", &name])
        // Partitions and packet loss of a client host are iptables rules inside it, added by
        // `docker exec` when lockbench is not root on the machine.
        .args(["--cap-add", "NET_ADMIN"])
        .args(
            (!binary_in_image())
                .then(|| ["-v".to_string(), format!("{}:{BINARY}:ro", exe.display())])
                .into_iter()
                .flatten(),
        )
        // Passed on from the coordinator's environment when set there.
        .args([
            "-e",
            "LOCKBENCH_LOG",
            "-e",
            "RUST_LOG",
            "-e",
            "RUST_BACKTRACE",
        ])
        .args(["--entrypoint", BINARY, &image()]);
    cmd
}

async fn docker(args: &[&str]) -> Result<String, String> {
    let out = tokio::process::Command::new("docker")
        .args(args)
        .output()
        .await
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Removes client container `client<n>` if it exists (running, paused or stopped).
pub async fn remove(n: u32) {
    let _ = docker(&["rm", "-f", &container(&format!("client{n}"))]).await;
}

/// The client containers that exist now: (container id, worker name).
async fn existing() -> Result<Vec<(String, String)>, String> {
    let filter = format!("label={LABEL}");
    let format = format!("{{{{.ID}}}} {{{{.Label \"{LABEL}\"}}}}");
    let out = docker(&["ps", "-a", "--filter", &filter, "--format", &format]).await?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, name)| (id.to_string(), name.to_string()))
        .collect())
}

/// Removes every client container (whatever run started it); returns the workers' names.
pub async fn remove_all() -> Result<Vec<String>, String> {
    let found = existing().await?;
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec!["rm", "-f"];
    args.extend(found.iter().map(|(id, _)| id.as_str()));
    docker(&args).await?;
    Ok(found.into_iter().map(|(_, name)| name).collect())
}

/// The pid, in the host's pid namespace, of the worker in client container `client<n>` (its
/// only process), once the container runs; `Err` when it does not within 30 s.
pub async fn host_pid(n: u32) -> Result<u32, String> {
    let name = container(&format!("client{n}"));
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < START_BUDGET {
        match docker(&["inspect", "--format", "{{.State.Pid}}", &name]).await {
            Ok(out) => match out.trim().parse::<u32>() {
                Ok(pid) if pid > 0 => return Ok(pid),
                _ => last = format!("{name} does not run (pid {})", out.trim()),
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!(
        "{name} did not start within {START_BUDGET:?}: {last}"
    ))
}

/// The running client containers as hosts (their network namespaces), by index.
pub fn hosts() -> Vec<Host> {
    let filter = format!("label={LABEL}");
    let Ok(out) = Command::new("docker")
        .args([
            "ps",
            "-q",
            "--filter",
            &filter,
            "--filter",
            "status=running",
        ])
        .args(["--filter", "status=paused"])
        .output()
    else {
        return Vec::new();
    };
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let format = format!("{{{{.State.Pid}}}} {{{{index .Config.Labels \"{LABEL}\"}}}}");
    let Ok(out) = Command::new("docker")
        .args(["inspect", "--format", &format])
        .args(&ids)
        .output()
    else {
        return Vec::new();
    };
    let mut hosts: Vec<(u32, Host)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (pid, name) = l.split_once(' ')?;
            let pid: u32 = pid.parse().ok().filter(|p| *p > 0)?;
            let n: u32 = name.strip_prefix("client")?.parse().ok()?;
            let exec = crate::access::exec_container(name);
            let host = Host {
                name: name.to_string(),
                netns: match &exec {
                    Some(c) => c.clone(),
                    None => format!("/proc/{pid}/ns/net"),
                },
                addr: address(n),
                exec,
            };
            Some((n, host))
        })
        .collect();
    hosts.sort_by_key(|(n, _)| *n);
    hosts.into_iter().map(|(_, h)| h).collect()
}
