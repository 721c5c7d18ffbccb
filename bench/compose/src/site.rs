//! [`Containers`]: docker-compose.yml's containers as a chaos [`Site`], so compose runs get the
//! managed cluster's [`ServerNemesis`](lockbench_chaos::ServerNemesis) itself: the same
//! target resolution (leader and followers from the same probes), the same grudges, the same
//! faults the systems offer (Redis's failover and clock-jump emulation), the same window
//! bookkeeping and notes.
//!
//! What differs, and why:
//! - **A server's host is its container's network namespace**, `/proc/<pid>/ns/net` (pid
//!   from `docker inspect`): as root, probes enter it as they enter a managed namespace, and
//!   partition rules go into its INPUT chain with `nsenter --net=... iptables`; without host
//!   root (or from a container of lockbench's own) the same probes and rules run inside the
//!   container by `docker exec` ([`crate::access`]). The root namespace's firewall (where
//!   Docker keeps its own rules) is never touched. A container that Docker
//!   restarts gets a fresh namespace, without rules (managed namespaces outlive their server:
//!   a server killed and restarted inside a partition stays cut off there, here it does not).
//! - **The coordinator is the compose bridge's address** (`.1` of the compose subnet): what
//!   lockbench's own in-process clients come from. Worker processes run in client containers
//!   (`lockbench-client<N>`, [`crate::clients`]), which are this site's client hosts: a
//!   partition of `client<N>` puts its rules inside that container's namespace.
//! - **pause / kill / start are Docker's** (`docker pause`: the cgroup freezer, every process
//!   of the container; `docker kill --signal KILL`; `docker start`), each checked against
//!   Docker's state afterwards: a verb whose effect Docker does not show is an error, reported
//!   as not applied.

use crate::file::{container, topology};
use lockbench_chaos::{Group, Host, Reach, Site};
use lockbench_cluster::{SERVERS, ServerSpec, Topology};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// docker-compose.yml's server containers.
pub struct Containers {
    topo: Topology,
    /// Container pids seen last (a restarted container has another; checked on use).
    pids: Mutex<BTreeMap<String, u32>>,
}

impl Default for Containers {
    fn default() -> Self {
        Containers::new()
    }
}

impl Containers {
    /// The compose cluster's containers.
    pub fn new() -> Containers {
        Containers {
            topo: topology(),
            pids: Mutex::new(BTreeMap::new()),
        }
    }

    /// The servers of `group`.
    pub fn servers(&self, group: Group) -> Vec<&'static ServerSpec> {
        SERVERS
            .iter()
            .copied()
            .filter(|s| s.group == group)
            .collect()
    }

    /// The pid of `name`'s container's main process, `None` when it does not run.
    fn pid(&self, name: &str) -> Option<u32> {
        let mut pids = self.pids.lock().expect("not poisoned");
        if let Some(&pid) = pids.get(name)
            && std::path::Path::new(&format!("/proc/{pid}/ns/net")).exists()
        {
            return Some(pid);
        }
        let out = inspect(name, "{{.State.Pid}}")?;
        let pid: u32 = out.trim().parse().ok().filter(|p| *p > 0)?;
        pids.insert(name.to_string(), pid);
        Some(pid)
    }

    fn forget(&self, name: &str) {
        self.pids.lock().expect("not poisoned").remove(name);
    }

    /// `(running, paused)` as Docker says.
    fn state(&self, name: &str) -> Option<(bool, bool)> {
        let out = inspect(name, "{{.State.Running}} {{.State.Paused}}")?;
        let mut w = out.split_whitespace();
        Some((w.next()? == "true", w.next()? == "true"))
    }

    /// Waits (bounded) until Docker shows `want` for `name`.
    async fn settle(&self, name: &str, want: impl Fn((bool, bool)) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if self.state(name).is_some_and(&want) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

/// `docker inspect --format <format> lockbench-<name>`, `None` when it fails.
pub(crate) fn inspect(name: &str, format: &str) -> Option<String> {
    let out = std::process::Command::new("docker")
        .args(["inspect", "--format", format, &container(name)])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How many more times `docker pause` is tried when runc could not freeze the container.
const FREEZE_RETRIES: usize = 2;

/// `docker <args>`; `Err` is Docker's complaint.
async fn docker(args: &[&str]) -> Result<(), String> {
    let out = tokio::process::Command::new("docker")
        .args(args)
        .output()
        .await
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Reach for Containers {
    fn topology(&self) -> &Topology {
        &self.topo
    }

    fn server_host(&self, spec: &ServerSpec) -> Option<Host> {
        let IpAddr::V4(addr) = self.topo.ip(spec) else {
            return None;
        };
        if let Some(c) = crate::access::exec_container(spec.name) {
            return self.is_running(spec.name).then(|| Host {
                name: spec.name.to_string(),
                netns: c.clone(),
                addr,
                exec: Some(c),
            });
        }
        let pid = self.pid(spec.name)?;
        Some(Host {
            name: spec.name.to_string(),
            netns: format!("/proc/{pid}/ns/net"),
            addr,
            exec: None,
        })
    }

    fn coordinator_addr(&self) -> Option<Ipv4Addr> {
        self.topo
            .net()
            .map(|_| crate::clients::coordinator_address())
    }

    /// The secure compose cluster's profile ([`crate::secure::probe`]), `None` when it runs
    /// plain.
    fn secure_probe(&self) -> anyhow::Result<Option<lockbench_cluster::SecureProbe>> {
        crate::secure::probe()
    }
}

impl Site for Containers {
    fn hosts_are(&self) -> &'static str {
        "the containers' network namespaces"
    }

    fn client_hosts(&self) -> Vec<Host> {
        crate::clients::hosts()
    }

    fn is_running(&self, name: &str) -> bool {
        self.state(name).is_some_and(|(running, _)| running)
    }

    fn is_paused(&self, name: &str) -> bool {
        self.state(name).is_some_and(|(_, paused)| paused)
    }

    async fn pause(&self, name: &str, stop: bool) -> Result<String, String> {
        if lockbench_cluster::by_name(name).is_none() && !self.is_running(name) {
            return Err(format!("{name} (no such server or client container runs)"));
        }
        let verb = if stop { "pause" } else { "unpause" };
        let c = container(name);
        let mut done = docker(&[verb, &c]).await;
        // runc gives up freezing a container whose processes do not all stop in time (seen on
        // a loaded 2-core machine: "OCI runtime pause failed: unable to freeze") and thaws it
        // again; another try a moment later freezes it.
        for _ in 0..FREEZE_RETRIES {
            match &done {
                Err(e) if stop && e.contains("unable to freeze") => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    done = docker(&[verb, &c]).await;
                }
                _ => break,
            }
        }
        done?;
        if self.settle(name, |(_, paused)| paused == stop).await {
            Ok(format!("docker {verb} {c}"))
        } else {
            Err(format!(
                "docker {verb} {c}: Docker does not show it {verb}d"
            ))
        }
    }

    async fn kill(&self, name: &str) -> Result<String, String> {
        let c = container(name);
        docker(&["kill", "--signal", "KILL", &c]).await?;
        self.forget(name);
        if self.settle(name, |(running, _)| !running).await {
            Ok(format!("docker kill --signal KILL {c}"))
        } else {
            Err(format!("docker kill {c}: it still runs"))
        }
    }

    async fn start(&self, name: &str) -> anyhow::Result<String> {
        let c = container(name);
        docker(&["start", &c]).await.map_err(anyhow::Error::msg)?;
        self.forget(name);
        if !self.settle(name, |(running, _)| running).await {
            anyhow::bail!("docker start {c}: it does not run");
        }
        let how = match lockbench_cluster::by_name(name).map(|s| s.system) {
            Some(sys) if sys.restarts_empty() => {
                format!("restarted EMPTY ({} runs without persistence)", sys.name())
            }
            _ => "restarted with its data directory (the lockbench-data volume)".to_string(),
        };
        Ok(format!("docker start {c}: {how}"))
    }
}
