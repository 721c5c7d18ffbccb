//! Where a nemesis's servers run ([`Site`]): the managed cluster's processes in network
//! namespaces ([`Managed`]), or docker-compose.yml's containers (the compose crate's site).
//!
//! Why a trait: every fault that is *data* (which servers, which split, who drops whose
//! packets, which member leads, when the failover's primary made its grant) is the same in
//! both places; only a handful of primitives differ: how a server is stopped, killed and
//! started, which network namespace is its host (a named `/run/netns` entry, or a container's
//! `/proc/<pid>/ns/net`), and which address the coordinator's packets come from. So the
//! [`ServerNemesis`](crate::ServerNemesis) is written once over a `Site`, and a split gives
//! the same DROP rules, in the same namespaces' INPUT chains, in both modes.
//!
//! [`Reach`] is the part probes and target resolution need (object safe, shared with the
//! [`LinkNemesis`](crate::LinkNemesis)); [`Site`] adds the process operations.

use lockbench_cluster::{Cluster, Group, Host, Network, SecureProbe, ServerSpec, Topology};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::future::Future;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// How to reach the servers: their addresses, and their hosts from inside.
pub trait Reach: Send + Sync {
    /// The servers' addresses and ports.
    fn topology(&self) -> &Topology;

    /// The network namespace server `spec` runs in, to probe it from inside (a partition may
    /// drop the coordinator's packets) and to put firewall rules in. `None` when the servers
    /// share one namespace (the loopback topology: no partitions).
    fn server_host(&self, spec: &ServerSpec) -> Option<Host>;

    /// The address the coordinator's packets (and its in-process clients') come from at the
    /// servers; `None` without hosts.
    fn coordinator_addr(&self) -> Option<Ipv4Addr>;

    /// What probes of a secure cluster's secured servers need (TLS with the client certificate,
    /// lockbench's user: [`lockbench_cluster::secure::probe`]), read when a probe is sent;
    /// `None` on a plain cluster, and where there is no secure profile (compose's containers).
    fn secure_probe(&self) -> anyhow::Result<Option<SecureProbe>> {
        Ok(None)
    }
}

/// A place servers run, with the process operations faults need.
pub trait Site: Reach + 'static {
    /// What the firewall rules are applied inside, for notes ("the hosts", "the containers'
    /// network namespaces").
    fn hosts_are(&self) -> &'static str;

    /// The client hosts (their own namespaces) that exist now.
    fn client_hosts(&self) -> Vec<Host>;

    /// `true` while server `name` runs (paused or not).
    fn is_running(&self, name: &str) -> bool;

    /// `true` while server `name` is paused (whoever paused it).
    fn is_paused(&self, name: &str) -> bool;

    /// Stops (`stop`) or resumes server or client host `name`; `Ok` is the note (what was
    /// done to what), `Err` says it is not running.
    fn pause(&self, name: &str, stop: bool) -> impl Future<Output = Result<String, String>> + Send;

    /// Kills server `name` at once (SIGKILL) and returns when it is dead; `Ok` is the note,
    /// `Err` says it was not running.
    fn kill(&self, name: &str) -> impl Future<Output = Result<String, String>> + Send;

    /// Starts server `name` again with its data; `Ok` is the note.
    fn start(&self, name: &str) -> impl Future<Output = anyhow::Result<String>> + Send;

    /// The clock file of server `name` where it runs under lockbench's clock shim
    /// ([`lockbench_cluster::ClockFile`]); `None` elsewhere (a container's server).
    fn clock_file(&self, _name: &str) -> Option<std::path::PathBuf> {
        None
    }

    /// The disk control of server `name` while it runs on a slow-disk pass-through
    /// ([`lockbench_slowdisk`], mounted by a run whose schedule has a `disk` fault); `None`
    /// elsewhere.
    fn disk(&self, _name: &str) -> Option<lockbench_slowdisk::DiskControl> {
        None
    }

    /// The file server `name` writes its log to, where the site keeps one; `None` elsewhere.
    fn log_file(&self, _name: &str) -> Option<std::path::PathBuf> {
        None
    }
}

/// The managed cluster: servers are processes in their namespaces (or on loopback).
#[derive(Clone)]
pub struct Managed {
    cluster: Cluster,
    topo: Topology,
}

impl Managed {
    /// The site of `cluster` (which must be up: its recorded topology is read now).
    pub fn new(cluster: Cluster) -> Managed {
        let topo = cluster.topology();
        Managed { cluster, topo }
    }

    /// The cluster.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The servers of `group` in the cluster.
    pub fn servers(&self, group: Group) -> Vec<&'static ServerSpec> {
        self.cluster
            .servers()
            .into_iter()
            .filter(|s| s.group == group)
            .collect()
    }

    fn network(&self) -> Option<Network> {
        self.topo.net().cloned().map(Network::new)
    }

    /// A server's process and every process below it (see [`tree`]), or every process in a
    /// client host.
    fn pids_of(&self, name: &str) -> Vec<u32> {
        if lockbench_cluster::by_name(name).is_some() {
            return self.cluster.server_pid(name).map(tree).unwrap_or_default();
        }
        self.client_hosts()
            .into_iter()
            .find(|h| h.name == name)
            .map(|h| h.pids())
            .unwrap_or_default()
    }
}

impl Reach for Managed {
    fn topology(&self) -> &Topology {
        &self.topo
    }

    fn server_host(&self, spec: &ServerSpec) -> Option<Host> {
        self.network().map(|n| n.server_host(spec))
    }

    fn coordinator_addr(&self) -> Option<Ipv4Addr> {
        self.topo.net().map(|c| c.bridge_addr())
    }

    fn secure_probe(&self) -> anyhow::Result<Option<SecureProbe>> {
        lockbench_cluster::secure::probe(self.cluster.state_dir())
    }
}

impl Site for Managed {
    fn hosts_are(&self) -> &'static str {
        "the hosts"
    }

    fn client_hosts(&self) -> Vec<Host> {
        self.network().map(|n| n.client_hosts()).unwrap_or_default()
    }

    fn is_running(&self, name: &str) -> bool {
        self.cluster.server_pid(name).is_some()
    }

    fn is_paused(&self, name: &str) -> bool {
        self.cluster
            .server_pid(name)
            .is_some_and(|p| proc_state(p) == Some('T'))
    }

    async fn pause(&self, name: &str, stop: bool) -> Result<String, String> {
        let pids = self.pids_of(name);
        if pids.is_empty() {
            return Err(name.to_string());
        }
        let sig = if stop {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        for &pid in &pids {
            let _ = kill(Pid::from_raw(pid as i32), sig);
        }
        // Seen, not requested: a process stops when each of its threads next leaves the
        // kernel (one in an uninterruptible disk wait only after it), so the note says when
        // every thread was seen stopped, or which one was not.
        let seen = if stop {
            match stopped_within(&pids, STOP_SEEN_WITHIN).await {
                Ok(after) => format!(", every thread stopped after {after:?}"),
                Err(running) => {
                    format!(", but {running} still not stopped after {STOP_SEEN_WITHIN:?}")
                }
            }
        } else {
            String::new()
        };
        let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        Ok(format!("{sig:?} {name} (pid {}){seen}", pids.join(",")))
    }

    async fn kill(&self, name: &str) -> Result<String, String> {
        let pid = self
            .cluster
            .server_pid(name)
            .ok_or_else(|| name.to_string())?;
        let pids = tree(pid);
        for &p in &pids {
            let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
        }
        for &p in &pids {
            wait_dead(p).await;
        }
        let below = match pids.len() {
            1 => String::new(),
            n => format!(" and the {} processes below it", n - 1),
        };
        Ok(format!("SIGKILL {name} (pid {pid}{below})"))
    }

    fn clock_file(&self, name: &str) -> Option<std::path::PathBuf> {
        self.cluster.clock_file(name)
    }

    fn disk(&self, name: &str) -> Option<lockbench_slowdisk::DiskControl> {
        self.cluster.disk_control(name)
    }

    fn log_file(&self, name: &str) -> Option<std::path::PathBuf> {
        Some(self.cluster.log_file(name))
    }

    async fn start(&self, name: &str) -> anyhow::Result<String> {
        let pid = match self.cluster.start_server(name).await {
            Ok(pid) => pid,
            // Another process's `up` (a test suite's other tests share the cluster) may have
            // restarted it between the check and the start.
            Err(e) => match self.cluster.server_pid(name) {
                Some(pid) => {
                    tracing::warn!(server = name, "restarted by another process meanwhile");
                    pid
                }
                None => return Err(e),
            },
        };
        let how = match lockbench_cluster::by_name(name).map(|s| s.system) {
            Some(sys) if sys.restarts_empty() => {
                format!("restarted EMPTY ({} runs without persistence)", sys.name())
            }
            _ => "restarted with its data directory".to_string(),
        };
        Ok(format!("{name} (pid {pid}) {how}"))
    }
}

/// `pid` and every process below it, parents before children. A server is its whole process
/// tree, as a container is: PostgreSQL serves each session from a child of the postmaster, so
/// SIGSTOP of the postmaster alone would leave every open session answering, and SIGKILL of it
/// alone would leave them running until they notice (what `docker pause` / `docker kill` never
/// do). Servers without children (ZooKeeper, etcd, Redis) are the one pid.
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // The field after the state, past the command name's closing parenthesis.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|f| f.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parents.push((p, ppid));
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out
}

/// How long a pause waits to see every thread of its targets stopped.
const STOP_SEEN_WITHIN: Duration = Duration::from_secs(2);

/// Waits until every thread of `pids` is stopped (`T`/`t`) or gone: how long that took, or
/// the first thread still running after `within` (`pid 12 thread 14 in state D`).
async fn stopped_within(pids: &[u32], within: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    loop {
        let running = pids.iter().find_map(|&pid| {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
            tasks.flatten().find_map(|t| {
                let tid = t.file_name().to_str()?.parse::<u32>().ok()?;
                let state = proc_state_of(&format!("/proc/{pid}/task/{tid}/stat"))?;
                (!matches!(state, 'T' | 't' | 'Z' | 'X'))
                    .then(|| format!("pid {pid} thread {tid} in state {state}"))
            })
        });
        match running {
            None => return Ok(start.elapsed()),
            Some(r) if start.elapsed() >= within => return Err(r),
            Some(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// The one-letter state in a `stat` file, `None` when it cannot be read.
fn proc_state_of(stat: &str) -> Option<char> {
    let stat = std::fs::read_to_string(stat).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The one-letter state of a process (`T` = stopped), `None` when gone.
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    proc_state_of(&format!("/proc/{pid}/stat"))
}

async fn wait_dead(pid: u32) {
    let start = Instant::now();
    while proc_state(pid).is_some_and(|s| s != 'Z' && s != 'X')
        && start.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's children are part of it: pause and kill act on the whole tree.
    #[test]
    fn a_process_tree_includes_the_children() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = Instant::now();
        let mut found = vec![pid];
        while found.len() < 3 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
            found = tree(pid);
        }
        for &p in found.iter().rev() {
            let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
        }
        let _ = child.wait();
        assert_eq!(found.len(), 3, "sh and its two sleeps: {found:?}");
        assert_eq!(found[0], pid);
    }
}
