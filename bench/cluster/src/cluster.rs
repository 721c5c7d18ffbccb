//! `up`, `down` and `status` of the managed cluster: loops over [`SERVERS`] that compare what
//! runs (pid files, `/proc`, health probes) with what should run, and fix the difference.

use crate::health;
use crate::hosts::{NetConfig, Network};
use crate::lock::{self, ClusterLock};
use crate::net::SecureProbe;
use crate::process::{self, PortUse};
use crate::secure;
use crate::spec::{self, SERVERS};
use crate::state_dir::{NodeDir, absolute};
use crate::topology::Topology;
use crate::{ClusterStatus, ServerStatus, install};
use anyhow::{Context, bail};
use lockbench_core::Probe;
use lockbench_core::{Group, ServerSpec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `up` waits for every server to become healthy (a cold ZooKeeper ensemble needs
/// about 8 s on an idle machine; much more while cargo compiles on every core).
const HEALTH_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a server that runs but does not answer gets before it is restarted (it may only be
/// waiting for peers that `up` just started).
const SUSPECT_GRACE: Duration = Duration::from_secs(20);
/// The marker that a group's users are set up (in its first member's node directory).
const USERS_MARKER: &str = "users-set-up";
/// Between `SIGTERM` and `SIGKILL`.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// The managed cluster of one state directory. Holds no processes or connections: every call
/// looks at the pid files and `/proc` afresh, so any `lockbench` process can manage servers
/// another one started.
#[derive(Clone, Debug)]
pub struct Cluster {
    state_dir: PathBuf,
    /// Only these servers (`None`: all of [`SERVERS`]).
    groups: Option<Vec<Group>>,
    /// The topology `up` uses instead of [`Topology::wanted`].
    topology: Option<Topology>,
    /// Whether `up` makes the cluster secure (`None`: as it is recorded, plain if nothing is).
    secure: Option<bool>,
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
            groups: None,
            topology: None,
            secure: None,
        }
    }

    /// The same cluster restricted to the servers of `groups` (`up` and `status` only look at
    /// those; `down` still stops everything of the state directory). For tests that need their
    /// own small cluster.
    pub fn with_groups(mut self, groups: &[Group]) -> Cluster {
        self.groups = Some(groups.to_vec());
        self
    }

    /// The same cluster, brought up in `topology` instead of the one the environment asks for
    /// ([`Topology::wanted`]).
    pub fn with_topology(mut self, topology: Topology) -> Cluster {
        self.topology = Some(topology);
        self
    }

    /// The same cluster, brought up secure (`true`: TLS and lockbench's user, `lockbench up
    /// --secure`) or plain (`false`), restarting it when it runs the other way. Without this,
    /// `up` keeps what the state directory records (so `lockbench run` never changes it).
    pub fn with_secure(mut self, secure: bool) -> Cluster {
        self.secure = Some(secure);
        self
    }

    /// `true` when the cluster is secure (its profile is recorded in the state directory).
    pub fn is_secure(&self) -> bool {
        secure::recorded(&self.state_dir)
    }

    /// What health probes need on a secure cluster (`None` on a plain one).
    fn secure_probe(&self) -> anyhow::Result<Option<SecureProbe>> {
        secure::probe(&self.state_dir)
            .context("cannot read the secure cluster's certificates and password")
    }

    /// The servers this cluster manages, in [`SERVERS`] order.
    pub fn servers(&self) -> Vec<&'static ServerSpec> {
        SERVERS
            .iter()
            .copied()
            .filter(|s| self.groups.as_ref().is_none_or(|g| g.contains(&s.group)))
            .collect()
    }

    /// The topology the servers run in (as recorded by the last `up`; loopback if none).
    pub fn topology(&self) -> Topology {
        Topology::recorded(&self.state_dir).unwrap_or(Topology::Loopback)
    }

    /// The network the servers run on, in the `netns` topology.
    pub fn network(&self) -> Option<Network> {
        self.topology().net().cloned().map(Network::new)
    }

    /// The pid of our live process for server `name`.
    pub fn server_pid(&self, name: &str) -> Option<u32> {
        process::our_pid(&self.node(name))
    }

    /// The clock file of server `name` ([`crate::ClockFile`]), where it was started with
    /// lockbench's clock shim: the `clock` fault sets its shift there.
    pub fn clock_file(&self, name: &str) -> Option<std::path::PathBuf> {
        Some(self.node(name).clock()).filter(|f| f.exists())
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// A server's log file (`<state>/cluster/<name>/server.log`).
    pub fn log_file(&self, name: &str) -> PathBuf {
        self.node(name).log()
    }

    pub(crate) fn node(&self, name: &str) -> NodeDir {
        NodeDir::new(&self.state_dir, name)
    }

    /// Takes the cluster lock (see [`ClusterLock`]) for callers that run several steps which
    /// must not interleave with another process's `up`/`down`; use the `*_locked` methods
    /// while holding it.
    pub async fn lock(&self) -> anyhow::Result<ClusterLock> {
        lock::lock(&self.state_dir).await
    }

    /// The fault-run lock's file (`<state>/faults.lock`, taken with [`crate::lock_path`]):
    /// runs that apply faults or put workers on client hosts hold it throughout, so they
    /// never heal, partition or remove each other's client hosts. Independent of the cluster
    /// lock (`up`/`down` do not wait for it).
    pub fn fault_lock_file(&self) -> PathBuf {
        self.state_dir.join("faults.lock")
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
        for line in self.detach_dead_disks().await? {
            tracing::warn!("left behind by a run that died: {line}");
        }
        let topo = match &self.topology {
            Some(t) => t.clone(),
            None => Topology::wanted()?,
        };
        let running = self.topology();
        let was_secure = self.is_secure();
        let secure = self.secure.unwrap_or(was_secure);
        if running != topo {
            tracing::warn!(
                from = running.kind(),
                to = topo.kind(),
                "the cluster's topology changes: stopping what runs first"
            );
            self.down_locked(_lock).await?;
        } else if secure != was_secure {
            tracing::warn!(
                secure,
                "the cluster changes between plain and secure: stopping what runs first"
            );
            self.down_locked(_lock).await?;
        }
        if let Topology::Netns(cfg) = &topo {
            let net = Network::new(cfg.clone());
            if let Some(owner) = net.owner().filter(|o| *o != self.state_dir) {
                let other = Cluster::new(owner.clone());
                if SERVERS.iter().any(|s| other.server_pid(s.name).is_some()) {
                    bail!(
                        "network {} ({}) is used by the lockbench cluster in {}, which is not \
                         a lockbench server of state dir {}: stop it (`lockbench down` with that \
                         LOCKBENCH_STATE_DIR) or choose another LOCKBENCH_NETNS_PREFIX and \
                         LOCKBENCH_SUBNET",
                        cfg.prefix,
                        cfg.cidr(),
                        owner.display(),
                        self.state_dir.display()
                    );
                }
            }
            net.claim(&self.state_dir)?;
        }
        topo.record(&self.state_dir)?;
        if secure {
            secure::ensure(&self.state_dir, &topo)?;
        }
        let sec = self.secure_probe()?;
        let sec = sec.as_ref();
        if let Topology::Netns(cfg) = &topo {
            let net = Network::new(cfg.clone());
            for spec in self.servers() {
                net.ensure(&net.server_host(spec))?;
            }
            // Fail in seconds, naming the cause, where the host's firewall drops traffic
            // between our hosts (a Docker host), rather than after the health timeout.
            if let [a, b, ..] = self.servers().as_slice() {
                let (from, to) = (net.server_host(a), net.server_host(b));
                tokio::task::spawn_blocking(move || net.check_forwarding(&from, &to)).await??;
            }
        }
        let all = self.servers();
        let mut probes = health::probe_all(&topo, &all, sec).await;
        if let Some(net) = topo.net().cloned().map(Network::new)
            && probes.iter().any(|p| !p.healthy)
        {
            // A partition left behind by a crashed fault run makes servers unreachable;
            // no restart would fix that.
            let flushed = flush_firewalls(&net, &all);
            if !flushed.is_empty() {
                tracing::warn!(hosts = ?flushed, "removed leftover firewall rules");
                probes = health::probe_all(&topo, &all, sec).await;
            }
        }
        let found: Vec<Found> = all
            .iter()
            .zip(&probes)
            .map(|(s, p)| self.inspect(s, p))
            .collect();

        // A system none of whose members still runs starts from empty data directories: a
        // fresh cluster, no leftovers of earlier runs, no half-bootstrapped etcd member.
        let warm: BTreeSet<&str> = all
            .iter()
            .zip(&found)
            .filter(|(_, f)| !matches!(f, Found::Absent))
            .map(|(s, _)| s.system.name())
            .collect();

        let mut started = false;
        let mut suspects = Vec::new();
        for (spec, found) in all.iter().zip(&found) {
            match found {
                Found::Healthy => {}
                Found::Absent => {
                    if !warm.contains(spec.system.name()) {
                        self.wipe_data(spec)?;
                    }
                    self.start(&topo, spec).await?;
                    started = true;
                }
                Found::Stopped(pid) => {
                    tracing::warn!(server = spec.name, pid, "restarting a stopped server");
                    process::terminate(&[*pid], STOP_GRACE).await;
                    self.start(&topo, spec).await?;
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
            let _ = health::wait_healthy(&topo, &all, sec, SUSPECT_GRACE).await;
            for (spec, pid) in suspects {
                if !health::probe(&topo, spec, sec).await.healthy {
                    tracing::warn!(server = spec.name, pid, "restarting unhealthy server");
                    process::terminate(&[pid], STOP_GRACE).await;
                    self.start(&topo, spec).await?;
                    started = true;
                }
            }
        }

        self.wait_up(&topo, sec).await?;
        if secure {
            self.set_up_users(&topo).await?;
        }
        if topo == Topology::Loopback {
            tracing::warn!(
                "loopback topology: every server on 127.0.0.1, PARTITIONS ARE UNAVAILABLE \
                 (run as root with network namespaces, or LOCKBENCH_TOPOLOGY=netns)"
            );
        }
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
        let _ = std::fs::remove_file(self.node(spec.name).root.join(USERS_MARKER));
        let data = self.node(spec.name).data();
        if data.exists() {
            std::fs::remove_dir_all(&data)
                .with_context(|| format!("cannot remove {}", data.display()))?;
        }
        Ok(())
    }

    /// Frees the server's ports from leftovers of ours, refuses foreign owners, writes its
    /// config and spawns it.
    async fn start(&self, topo: &Topology, spec: &ServerSpec) -> anyhow::Result<u32> {
        let node = self.node(spec.name);
        let secure = secure::load(&self.state_dir)?;
        let secure = secure.as_ref().filter(|_| secure::honoured(spec));
        std::fs::create_dir_all(&node.root)
            .with_context(|| format!("cannot create {}", node.root.display()))?;
        if let Some(net) = topo.net().cloned().map(Network::new) {
            // The server's own host: whatever still runs in it is a leftover of ours.
            let host = net.server_host(spec);
            net.ensure(&host)?;
            let leftovers = host.pids();
            if let Some(&pid) = leftovers.iter().find(|&&p| !process::is_ours(p, &node)) {
                bail!(
                    "cannot start {}: its host {} runs pid {pid} (`{}`), which is not a \
                     lockbench server of state dir {}",
                    spec.name,
                    host.netns,
                    process::cmdline(pid),
                    self.state_dir.display()
                );
            }
            if !leftovers.is_empty() {
                tracing::warn!(server = spec.name, pids = ?leftovers, "killing leftovers in its host");
                crate::hosts::kill_all(&leftovers);
            }
            let cmd = spec::prepare(spec, topo, &self.state_dir, &node, secure)?;
            let pid = process::spawn(&cmd, &node, Some(&host.netns))
                .with_context(|| format!("cannot start {}", spec.name))?;
            tracing::info!(server = spec.name, pid, host = host.netns, "started");
            return Ok(pid);
        }
        for port in topo.ports(spec) {
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
        let cmd = spec::prepare(spec, topo, &self.state_dir, &node, secure)?;
        let pid = process::spawn(&cmd, &node, None)
            .with_context(|| format!("cannot start {}", spec.name))?;
        tracing::info!(server = spec.name, pid, "started");
        Ok(pid)
    }

    /// Waits for every server to be healthy; fails early when one of ours has exited.
    async fn wait_up(&self, topo: &Topology, sec: Option<&SecureProbe>) -> anyhow::Result<()> {
        let all = self.servers();
        let deadline = tokio::time::Instant::now() + HEALTH_TIMEOUT;
        loop {
            let step = tokio::time::Instant::now() + Duration::from_secs(1);
            if health::wait_healthy(topo, &all, sec, Duration::from_secs(1))
                .await
                .is_ok()
            {
                return Ok(());
            }
            if let Some(spec) = all
                .iter()
                .find(|s| process::our_pid(&self.node(s.name)).is_none())
            {
                let log = self.log_file(spec.name);
                bail!(
                    "{} ({}) exited while starting; see its log {}:\n{}",
                    spec.name,
                    topo.endpoint(spec),
                    log.display(),
                    log_tail(&log, 15)
                );
            }
            if tokio::time::Instant::now() >= deadline {
                let unhealthy = health::wait_healthy(topo, &all, sec, Duration::ZERO)
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
    /// port), `SIGTERM` then `SIGKILL`, and removes the pid files; in the `netns` topology it
    /// then removes the network (every process left in its namespaces, client hosts included,
    /// the namespaces with their firewall rules, the veths and the bridge). Idempotent. Takes
    /// the lock.
    pub async fn down(&self) -> anyhow::Result<()> {
        let guard = self.lock().await?;
        self.down_locked(&guard).await
    }

    /// [`Cluster::down`] for a caller that already holds the cluster lock.
    pub async fn down_locked(&self, _lock: &ClusterLock) -> anyhow::Result<()> {
        let mut pids = BTreeSet::new();
        for spec in SERVERS.iter() {
            let node = self.node(spec.name);
            pids.extend(process::our_pid(&node));
            for port in Topology::Loopback.ports(spec) {
                if let PortUse::Pid(pid) = process::port_use(port)
                    && process::is_ours(pid, &node)
                {
                    pids.insert(pid);
                }
            }
        }
        let pids: Vec<u32> = pids.into_iter().collect();
        if !pids.is_empty() {
            tracing::info!(?pids, "stopping servers");
        }
        process::terminate(&pids, STOP_GRACE).await;
        for spec in SERVERS.iter() {
            let _ = std::fs::remove_file(self.node(spec.name).pid_file());
        }
        for mount in lockbench_slowdisk::mounts(&self.state_dir) {
            lockbench_slowdisk::detach(&mount)?;
        }
        // The recorded network, else the one the environment names (a state directory that
        // lost its record after a crash), if it is ours or its owner's state directory is gone.
        let net = self
            .network()
            .or_else(|| NetConfig::from_env().ok().map(Network::new));
        if let Some(net) =
            net.filter(|n| n.owner().is_none_or(|o| o == self.state_dir || !o.exists()))
        {
            let removed = net.teardown()?;
            if !removed.is_empty() {
                tracing::info!(?removed, "network removed");
            }
        }
        secure::forget(&self.state_dir);
        Ok(())
    }

    /// Starts one server that is not running (with its data directory as it is: ZooKeeper and
    /// etcd rejoin with their data, Redis without persistence starts empty) and returns its
    /// pid without waiting for it to be healthy ([`Cluster::wait_healthy`]). For fault
    /// injection (`kill` / `start`). Takes the cluster lock.
    pub async fn start_server(&self, name: &str) -> anyhow::Result<u32> {
        let spec = spec::by_name(name).with_context(|| format!("no server named {name}"))?;
        let _guard = self.lock().await?;
        if let Some(pid) = self.server_pid(name)
            && process::state(pid) != Some('T')
        {
            bail!("{name} is already running (pid {pid})");
        }
        self.start(&self.topology(), spec).await
    }

    /// Waits until the named servers are healthy (ZooKeeper: exactly one leader among them).
    pub async fn wait_healthy(&self, names: &[&str], timeout: Duration) -> anyhow::Result<()> {
        let specs: Vec<&'static ServerSpec> = names
            .iter()
            .map(|n| spec::by_name(n).with_context(|| format!("no server named {n}")))
            .collect::<anyhow::Result<_>>()?;
        let sec = self.secure_probe()?;
        health::wait_healthy(&self.topology(), &specs, sec.as_ref(), timeout)
            .await
            .map_err(|bad| anyhow::anyhow!("not healthy after {timeout:?}: {}", bad.join(", ")))
    }

    /// Every server's process and health, and the endpoints. Does not take the lock.
    pub async fn status(&self) -> anyhow::Result<ClusterStatus> {
        let topo = self.topology();
        let all = self.servers();
        let sec = self.secure_probe()?;
        let probes = health::probe_all(&topo, &all, sec.as_ref()).await;
        let secure_now = sec.is_some();
        let servers = all
            .iter()
            .zip(probes)
            .map(|(spec, probe)| {
                let node = self.node(spec.name);
                let pid = process::our_pid(&node);
                let endpoint = match secure_now && secure::honoured(spec) {
                    true => spec.system.secure_endpoint(topo.client_addr(spec)),
                    false => topo.endpoint(spec),
                };
                ServerStatus {
                    name: spec.name.to_string(),
                    system: spec.system.name().to_string(),
                    group: spec.group,
                    endpoint,
                    host: topo.netns(spec),
                    addr: topo.ip(spec),
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
            endpoints: self.endpoints_of(&topo, &all),
            topology: topo,
            servers,
        })
    }
}

/// The managed cluster's endpoints in a topology (fixed ports on loopback; host addresses and
/// standard ports in namespaces).
pub fn endpoints(topo: &Topology) -> lockbench_core::Endpoints {
    endpoints_of(topo, &SERVERS)
}

fn endpoints_of(topo: &Topology, servers: &[&ServerSpec]) -> lockbench_core::Endpoints {
    lockbench_registry::listed_groups()
        .into_iter()
        .map(|g| {
            let list = servers.iter().filter(|s| s.group == g);
            (g.name(), list.map(|s| topo.endpoint(s)).collect())
        })
        .collect()
}

impl Cluster {
    /// On a secure cluster, creates lockbench's user where a system does so after its servers
    /// are up ([`secure::set_up_users`]), once per data: a marker in the group's first member's
    /// node directory says it was done, and goes with the data when the system starts from
    /// cold (which loses the users).
    async fn set_up_users(&self, topo: &Topology) -> anyhow::Result<()> {
        let marker = |first: &ServerSpec| Some(self.node(first.name).root.join(USERS_MARKER));
        secure::set_up_users(&self.state_dir, topo, &self.servers(), marker).await
    }

    /// The endpoints of `servers`, with the secure profile's connection settings on every
    /// group whose servers all honour it (on a secure cluster).
    fn endpoints_of(&self, topo: &Topology, servers: &[&ServerSpec]) -> lockbench_core::Endpoints {
        let endpoints = endpoints_of(topo, servers);
        if !self.is_secure() {
            return endpoints;
        }
        secure::endpoints(&self.state_dir, topo, servers, endpoints)
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

/// Flushes the firewall of every existing server host; returns the hosts that had rules.
fn flush_firewalls(net: &Network, servers: &[&ServerSpec]) -> Vec<String> {
    let mut flushed = Vec::new();
    for spec in servers {
        let host = net.server_host(spec);
        if !host.exists() {
            continue;
        }
        if host.has_firewall_rules(None) {
            let _ = host.iptables(&["-F"]);
            flushed.push(host.name);
        }
    }
    flushed
}
