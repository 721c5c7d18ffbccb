//! `up`, `down` and `status` of the managed cluster: loops over [`SERVERS`] that compare what
//! runs (pid files, `/proc`, health probes) with what should run, and fix the difference.

use crate::health::{self, Probe};
use crate::lock::{self, ClusterLock};
use crate::process::{self, PortUse};
use crate::spec::{Group, SERVERS, ServerSpec, System};
use crate::state_dir::{NodeDir, absolute};
use crate::{ClusterStatus, ServerStatus, install};
use anyhow::{Context, bail};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `up` waits for every server to become healthy (a cold ZooKeeper ensemble needs
/// about 8 s on an idle machine; much more while cargo compiles on every core).
const HEALTH_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a server that runs but does not answer gets before it is restarted (it may only be
/// waiting for peers that `up` just started).
const SUSPECT_GRACE: Duration = Duration::from_secs(20);
/// Between `SIGTERM` and `SIGKILL`.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The managed cluster of one state directory. Holds no processes or connections: every call
/// looks at the pid files and `/proc` afresh, so any `lockbench` process can manage servers
/// another one started.
#[derive(Clone, Debug)]
pub struct Cluster {
    state_dir: PathBuf,
}

/// What [`Cluster::up`] did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UpReport {
    /// `true` when `up` started (or restarted) at least one server, so a caller that wants to
    /// leave the machine as it found it should call [`Cluster::down`] afterwards.
    pub started: bool,
    /// Every server, healthy.
    pub status: ClusterStatus,
}

/// What `up` found a server doing before it acted.
enum Found {
    Healthy,
    /// Left stopped (`SIGSTOP`) by a crashed fault run: restart at once.
    Stopped(u32),
    /// Running but not answering: maybe only waiting for peers.
    Unhealthy(u32),
    Absent,
}

impl Cluster {
    /// The cluster whose files live under `state_dir` (made absolute).
    pub fn new(state_dir: PathBuf) -> Cluster {
        Cluster {
            state_dir: absolute(&state_dir),
        }
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// A server's log file (`<state>/cluster/<name>/server.log`).
    pub fn log_file(&self, name: &str) -> PathBuf {
        self.node(name).log()
    }

    fn node(&self, name: &str) -> NodeDir {
        NodeDir::new(&self.state_dir, name)
    }

    /// Takes the cluster lock (see [`ClusterLock`]) for callers that run several steps which
    /// must not interleave with another process's `up`/`down`; use the `*_locked` methods
    /// while holding it.
    pub async fn lock(&self) -> anyhow::Result<ClusterLock> {
        lock::lock(&self.state_dir).await
    }

    /// Brings every server up and healthy, under the cluster lock. Idempotent: healthy servers
    /// are reused; leftovers of a crashed run (stale pid files, stopped or unresponsive
    /// processes of ours, our processes without a pid file) are killed and restarted; a port
    /// held by a process that is not ours is an error naming the port. Runs
    /// `scripts/install-deps` first when a server binary or jar is missing.
    pub async fn up(&self) -> anyhow::Result<UpReport> {
        let guard = self.lock().await?;
        self.up_locked(&guard).await
    }

    /// [`Cluster::up`] for a caller that already holds the cluster lock.
    pub async fn up_locked(&self, _lock: &ClusterLock) -> anyhow::Result<UpReport> {
        install::ensure_installed().await?;
        let all: Vec<&ServerSpec> = SERVERS.iter().collect();
        let probes = health::probe_all(&all).await;
        let found: Vec<Found> = SERVERS
            .iter()
            .zip(&probes)
            .map(|(s, p)| self.inspect(s, p))
            .collect();

        // A system none of whose members still runs starts from empty data directories: a
        // fresh cluster, no leftovers of earlier runs, no half-bootstrapped etcd member.
        let warm: BTreeSet<System> = SERVERS
            .iter()
            .zip(&found)
            .filter(|(_, f)| !matches!(f, Found::Absent))
            .map(|(s, _)| s.system)
            .collect();

        let mut started = false;
        let mut suspects = Vec::new();
        for (spec, found) in SERVERS.iter().zip(&found) {
            match found {
                Found::Healthy => {}
                Found::Absent => {
                    if !warm.contains(&spec.system) {
                        self.wipe_data(spec)?;
                    }
                    self.start(spec).await?;
                    started = true;
                }
                Found::Stopped(pid) => {
                    tracing::warn!(server = spec.name, pid, "restarting a stopped server");
                    process::terminate(&[*pid], STOP_GRACE).await;
                    self.start(spec).await?;
                    started = true;
                }
                Found::Unhealthy(pid) => suspects.push((spec, *pid)),
            }
        }

        if !suspects.is_empty() {
            let names: Vec<&str> = suspects.iter().map(|(s, _)| s.name).collect();
            tracing::info!(
                ?names,
                "servers run but are not healthy; giving them {SUSPECT_GRACE:?}"
            );
            let _ = health::wait_healthy(SUSPECT_GRACE).await;
            for (spec, pid) in suspects {
                if !health::probe(spec).await.healthy {
                    tracing::warn!(server = spec.name, pid, "restarting unhealthy server");
                    process::terminate(&[pid], STOP_GRACE).await;
                    self.start(spec).await?;
                    started = true;
                }
            }
        }

        self.wait_up().await?;
        Ok(UpReport {
            started,
            status: self.status().await?,
        })
    }

    /// Classifies one server: ours and healthy, ours but not healthy, or not running.
    fn inspect(&self, spec: &ServerSpec, probe: &Probe) -> Found {
        let node = self.node(spec.name);
        match process::our_pid(&node) {
            // A server left stopped (SIGSTOP) by a crashed fault run: nothing to wait for.
            Some(pid) if process::state(pid) == Some('T') => Found::Stopped(pid),
            Some(_) if probe.healthy => Found::Healthy,
            Some(pid) => Found::Unhealthy(pid),
            None => {
                let _ = std::fs::remove_file(node.pid_file());
                Found::Absent
            }
        }
    }

    fn wipe_data(&self, spec: &ServerSpec) -> anyhow::Result<()> {
        let data = self.node(spec.name).data();
        if data.exists() {
            std::fs::remove_dir_all(&data)
                .with_context(|| format!("cannot remove {}", data.display()))?;
        }
        Ok(())
    }

    /// Frees the server's ports from leftovers of ours, refuses foreign owners, writes its
    /// config and spawns it.
    async fn start(&self, spec: &ServerSpec) -> anyhow::Result<u32> {
        let node = self.node(spec.name);
        std::fs::create_dir_all(&node.root)
            .with_context(|| format!("cannot create {}", node.root.display()))?;
        for port in spec.ports() {
            match process::port_use(port) {
                PortUse::Free => {}
                PortUse::Pid(pid) if process::is_ours(pid, &node) => {
                    tracing::warn!(
                        server = spec.name,
                        pid,
                        port,
                        "killing a leftover server without pid file"
                    );
                    process::terminate(&[pid], STOP_GRACE).await;
                }
                PortUse::Pid(pid) => bail!(
                    "cannot start {}: port {port} is taken by pid {pid} (`{}`), which is not a \
                     lockbench server of state dir {}; stop it (if it belongs to another \
                     lockbench state dir, run `lockbench down` with that LOCKBENCH_STATE_DIR)",
                    spec.name,
                    process::cmdline(pid),
                    self.state_dir.display()
                ),
                PortUse::Unknown => bail!(
                    "cannot start {}: port {port} is taken by a process of another user",
                    spec.name
                ),
            }
        }
        let cmd = spec.prepare(&self.state_dir, &node)?;
        let pid =
            process::spawn(&cmd, &node).with_context(|| format!("cannot start {}", spec.name))?;
        tracing::info!(server = spec.name, pid, "started");
        Ok(pid)
    }

    /// Waits for every server to be healthy; fails early when one of ours has exited.
    async fn wait_up(&self) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + HEALTH_TIMEOUT;
        loop {
            let step = tokio::time::Instant::now() + Duration::from_secs(1);
            if health::wait_healthy(Duration::from_secs(1)).await.is_ok() {
                return Ok(());
            }
            if let Some(spec) = SERVERS
                .iter()
                .find(|s| process::our_pid(&self.node(s.name)).is_none())
            {
                let log = self.log_file(spec.name);
                bail!(
                    "{} ({}) exited while starting; see its log {}:\n{}",
                    spec.name,
                    spec.endpoint(),
                    log.display(),
                    log_tail(&log, 15)
                );
            }
            if tokio::time::Instant::now() >= deadline {
                let unhealthy = health::wait_healthy(Duration::ZERO)
                    .await
                    .err()
                    .unwrap_or_default();
                let Some(name) = unhealthy.first() else {
                    bail!(
                        "ZooKeeper did not elect exactly one leader within {HEALTH_TIMEOUT:?}; see {}",
                        self.log_file("zk1").display()
                    );
                };
                let log = self.log_file(name);
                bail!(
                    "not healthy after {HEALTH_TIMEOUT:?}: {}; see the log of {name}: {}\n{}",
                    unhealthy.join(", "),
                    log.display(),
                    log_tail(&log, 15)
                );
            }
            tokio::time::sleep_until(step).await;
        }
    }

    /// Stops every server of ours (pid files, and processes of ours still holding a server's
    /// port), `SIGTERM` then `SIGKILL`, and removes the pid files. Idempotent. Takes the lock.
    pub async fn down(&self) -> anyhow::Result<()> {
        let guard = self.lock().await?;
        self.down_locked(&guard).await
    }

    /// [`Cluster::down`] for a caller that already holds the cluster lock.
    pub async fn down_locked(&self, _lock: &ClusterLock) -> anyhow::Result<()> {
        let mut pids = BTreeSet::new();
        for spec in &SERVERS {
            let node = self.node(spec.name);
            pids.extend(process::our_pid(&node));
            for port in spec.ports() {
                if let PortUse::Pid(pid) = process::port_use(port) {
                    if process::is_ours(pid, &node) {
                        pids.insert(pid);
                    }
                }
            }
        }
        let pids: Vec<u32> = pids.into_iter().collect();
        if !pids.is_empty() {
            tracing::info!(?pids, "stopping servers");
        }
        process::terminate(&pids, STOP_GRACE).await;
        for spec in &SERVERS {
            let _ = std::fs::remove_file(self.node(spec.name).pid_file());
        }
        Ok(())
    }

    /// Every server's process and health, and the endpoints. Does not take the lock.
    pub async fn status(&self) -> anyhow::Result<ClusterStatus> {
        let all: Vec<&ServerSpec> = SERVERS.iter().collect();
        let probes = health::probe_all(&all).await;
        let servers = SERVERS
            .iter()
            .zip(probes)
            .map(|(spec, probe)| {
                let node = self.node(spec.name);
                let pid = process::our_pid(&node);
                ServerStatus {
                    name: spec.name.to_string(),
                    system: spec.system.name().to_string(),
                    endpoint: spec.endpoint(),
                    pid,
                    running: pid.is_some(),
                    healthy: pid.is_some() && probe.healthy,
                    role: probe.role,
                    log: node.log(),
                    rss_bytes: pid.and_then(process::rss_bytes),
                }
            })
            .collect();
        Ok(ClusterStatus {
            state_dir: self.state_dir.clone(),
            servers,
            endpoints: endpoints(),
        })
    }
}

/// The managed cluster's endpoints (fixed ports).
pub fn endpoints() -> lockbench_core::Endpoints {
    let list = |g: Group| {
        SERVERS
            .iter()
            .filter(|s| s.group == g)
            .map(|s| s.endpoint())
            .collect()
    };
    lockbench_core::Endpoints {
        zookeeper: list(Group::Zookeeper),
        etcd: list(Group::Etcd),
        redis: list(Group::Redis),
        redlock: list(Group::Redlock),
    }
}

/// The last `n` lines of a log file, indented, for error messages.
fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("    {l}\n"))
        .collect()
}
