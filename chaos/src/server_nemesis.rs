//! [`ServerNemesis`]: faults on the servers of one backend's system (and on client hosts,
//! for partitions and pauses), in either topology of the managed cluster or on
//! docker-compose.yml's containers: it is written once over a [`Site`] (see `site.rs`).
//!
//! Events name fault *windows*: `fault` is the verb that opened the window (`partition`,
//! `link-blackhole`, `pause`, `kill`, `clock-jump`), `phase` says whether this event opened
//! (`start`) or closed (`stop`: heal, resume, start) it. A clock jump is instantaneous: one
//! `start` event. What cannot be done here is reported with `applied = false` and the reason
//! (partitions and link faults in the loopback topology, leader of Redlock, link delay
//! without link proxies).

use crate::grudge::{self, COORDINATOR, Hosts};
use crate::site::{Managed, Site};
use crate::{Nemesis, firewall, targets};
use lockbench_cluster::{Cluster, Group, Host, ServerSpec, Topology};
use lockbench_core::{
    Cut, Fault, FaultEvent, FaultKind, FaultPhase, PartitionSpec, RunClock, Targets,
};
use rand::RngCore;
use rand::seq::SliceRandom;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Applies faults to the servers of one system (ZooKeeper, etcd, the standalone Redis, the
/// Redlock servers, the failover pair) of a [`Site`] and to its client hosts.
///
/// - `partition` / `link-blackhole` / `heal`: iptables DROP rules inside the namespaces (see
///   [`crate::grudge`] for where clients stand in each split); netns topology only.
/// - `pause` / `resume`: SIGSTOP / SIGCONT of the server process and every process below it
///   (PostgreSQL serves each session from a child), or of every process in a
///   client host named in `Nodes` (a container: `docker pause` / `docker unpause`). `resume` with any target other than `Nodes` resumes
///   everything this nemesis paused (the leader it paused is no longer the leader).
/// - `kill` / `start`: SIGKILL (of the process tree); restart through [`Cluster::start_server`] (a container:
///   `docker start`) with the same data directory (Redis has no persistence: it comes back
///   empty). `start` with any target other
///   than `Nodes` restarts everything this nemesis killed.
/// - `clock`: each target's wall clock shifted through lockbench's clock shim, seen in the
///   shim's count of shifted reads; put back at `heal` (`clock_shift.rs`).
/// - `disk`: each target's writes and syncs slowed or held by the slow-disk pass-through the
///   run mounted over its data directory, seen in the pass-through's count of held
///   operations; put back at `heal` (`disk_stall.rs`).
/// - `clock-jump`: the jump the servers' system offers (`clock.rs`; Redis's emulation shortens
///   every TTL by the jump); not applied to a system that offers none.
/// - a fault the servers' system offers for their group (`redis-failover`): found by its verb
///   and applied through the site (`offered.rs`); `heal` flushes its rules and then undoes it.
/// - `promote`: SIGKILL of the leader, then the system's promote request to a replica,
///   verified; `heal` restarts the former leader, which rejoins as a replica (`promote.rs`).
/// - `packet-loss`: iptables `statistic` DROP rules in the target servers' namespaces, both
///   ways, checked with a probe against the rules' counters (see `loss.rs`).
/// - `link-delay`: a latency toxic on the run's link proxies, applied by the
///   [`LinkNemesis`](crate::LinkNemesis); it reaches this nemesis only when no proxies stand
///   in front of these servers, and is then reported as not applied.
pub struct ServerNemesis<S: Site = Managed> {
    pub(crate) site: S,
    pub(crate) servers: Vec<&'static ServerSpec>,
    rng: Box<dyn RngCore + Send>,
    /// Open partition-like windows: (verb, targets).
    pub(crate) windows: Vec<(FaultKind, Vec<String>)>,
    /// Open `packet-loss` windows, for their measured share at heal.
    pub(crate) losses: Vec<crate::loss::Window>,
    pub(crate) paused: BTreeSet<String>,
    pub(crate) killed: BTreeSet<String>,
    /// Former leaders a `promote` killed, restarted at `heal` (see `promote.rs`).
    pub(crate) demoted: Vec<String>,
    /// Servers whose wall clock a `clock` fault moved, with their clock files, put right at
    /// `heal` (`clock_shift.rs`).
    pub(crate) shifted: BTreeMap<String, lockbench_cluster::ClockFile>,
    /// Servers whose disk a `disk` fault slowed or froze, with their controls and the count
    /// of held operations when it began, put right at `heal` (`disk_stall.rs`).
    pub(crate) stalled: BTreeMap<String, (lockbench_slowdisk::DiskControl, u64)>,
    /// Where each server's log stood when the first of those stalls began: what the servers
    /// wrote since is read for their system's signs at `heal`.
    pub(crate) disk_logs: Vec<(std::path::PathBuf, u64)>,
    /// Client hosts the site does not know: the network namespaces of workers that dialled
    /// in from containers of their own (a Swarm task's), by worker name.
    pub(crate) extra_clients: Vec<Host>,
}

impl ServerNemesis<Managed> {
    /// A nemesis for the servers of `group` in `cluster` (which must be up), drawing its
    /// seeded choices (`one`, `minority`, `halves`, ...) from `rng`.
    pub fn new(
        cluster: Cluster,
        group: Group,
        rng: impl RngCore + Send + 'static,
    ) -> ServerNemesis {
        let site = Managed::new(cluster);
        let servers = site.servers(group);
        ServerNemesis::on(site, servers, rng)
    }
}

impl<S: Site> ServerNemesis<S> {
    /// A nemesis for `servers` (one system's) of `site`, drawing its seeded choices from `rng`.
    pub fn on(
        site: S,
        servers: Vec<&'static ServerSpec>,
        rng: impl RngCore + Send + 'static,
    ) -> ServerNemesis<S> {
        ServerNemesis {
            site,
            servers,
            rng: Box::new(rng),
            windows: Vec::new(),
            losses: Vec::new(),
            paused: BTreeSet::new(),
            killed: BTreeSet::new(),
            demoted: Vec::new(),
            shifted: BTreeMap::new(),
            stalled: BTreeMap::new(),
            disk_logs: Vec::new(),
            extra_clients: Vec::new(),
        }
    }

    /// Adds client hosts the site does not list (a Swarm task's container, whose namespace is
    /// its worker's): partitions resolve, cut, verify and flush them like the site's own. A
    /// host with a name the site also has takes its place.
    pub fn add_client_hosts(&mut self, hosts: Vec<Host>) {
        self.extra_clients.extend(hosts);
    }

    /// The topology the servers run in.
    pub fn topology(&self) -> &Topology {
        self.site.topology()
    }

    /// The names of the servers this nemesis acts on.
    pub fn server_names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.to_string()).collect()
    }

    /// The current leader (ZooKeeper, etcd; the standalone Redis server is its own primary).
    pub async fn leader(&self) -> anyhow::Result<String> {
        targets::leader(&self.site, &self.servers).await
    }

    /// Resolves targets now (the same resolution faults use).
    pub async fn resolve(&mut self, t: &Targets) -> anyhow::Result<Vec<String>> {
        let clients = self
            .client_hosts()
            .into_iter()
            .map(|h| h.name)
            .collect::<Vec<_>>();
        targets::resolve(t, &self.site, &self.servers, &clients, &mut *self.rng).await
    }

    pub(crate) fn client_hosts(&self) -> Vec<Host> {
        client_hosts(&self.site, &self.extra_clients)
    }

    /// Where the rules go and every host's address: [`hosts_of`] this nemesis's servers.
    fn hosts(
        &self,
        coordinator: Ipv4Addr,
        clients: Vec<Host>,
    ) -> (BTreeMap<String, Host>, BTreeMap<String, Ipv4Addr>) {
        hosts_of(&self.site, &self.servers, coordinator, clients)
    }

    pub(crate) fn spec(&self, name: &str) -> Option<&'static ServerSpec> {
        self.servers.iter().copied().find(|s| s.name == name)
    }

    async fn partition(&mut self, split: &PartitionSpec, clock: &RunClock) -> FaultEvent {
        let Some(coordinator) = self.site.coordinator_addr() else {
            return FaultEvent::not_applied(
                clock,
                FaultKind::Partition,
                vec![],
                unavailable("partitions"),
            );
        };
        let clients = self.client_hosts();
        let client_names: Vec<String> = clients.iter().map(|h| h.name.clone()).collect();
        let isolated = match split {
            PartitionSpec::Isolate(t) => match self.resolve(t).await {
                Ok(t) => t,
                Err(e) => {
                    return FaultEvent::not_applied(
                        clock,
                        FaultKind::Partition,
                        vec![],
                        format!("{e:#}"),
                    );
                }
            },
            PartitionSpec::Cut(cut) => match self.resolve_cut(cut, &client_names).await {
                Ok(t) => t,
                Err(e) => {
                    return FaultEvent::not_applied(clock, FaultKind::Partition, vec![], e);
                }
            },
            PartitionSpec::Halves
            | PartitionSpec::MajoritiesRing
            | PartitionSpec::Bridge
            | PartitionSpec::ClientsOff
            | PartitionSpec::RedlockOverlap => Vec::new(),
        };
        let servers = self.server_names();
        let mut shuffled = servers.clone();
        shuffled.shuffle(&mut *self.rng);
        let hosts = Hosts {
            servers: &servers,
            shuffled: &shuffled,
            clients: &client_names,
        };
        let g = grudge::grudge(split, &hosts, &isolated);
        let targets = match split {
            PartitionSpec::Isolate(_) | PartitionSpec::Cut(_) => isolated.clone(),
            PartitionSpec::Halves => shuffled[..servers.len() / 2].to_vec(),
            PartitionSpec::ClientsOff => {
                let mut c = client_names.clone();
                c.push(COORDINATOR.into());
                c
            }
            PartitionSpec::MajoritiesRing
            | PartitionSpec::Bridge
            | PartitionSpec::RedlockOverlap => servers.clone(),
        };
        // A client host loses a server whichever way the packets are dropped.
        let cut_clients = self.cut_clients(&grudge::both_ways(&g), &clients);
        let (by_name, addrs) = self.hosts(coordinator, clients);
        let missing = self.not_entered(&by_name);
        let pairs = grudge::cut_pairs(&g);
        let lost = self.cut_from_coordinator(&g);
        let applied =
            tokio::task::spawn_blocking(move || firewall::apply(&by_name, &addrs, &g)).await;
        let mut note = format!(
            "iptables DROP inside {}, cut: {}",
            self.site.hosts_are(),
            pairs.join(" ")
        );
        if matches!(split, PartitionSpec::MajoritiesRing) && servers.len() == 3 {
            note.push_str(
                " (a majorities ring of 3 cannot be symmetric: every server pair is cut)",
            );
        }
        match applied {
            Ok(Ok(rules)) => {
                note = format!("{note} ({rules} rules; coordinator = {coordinator}){missing}");
                let event = FaultEvent::now(
                    clock,
                    FaultKind::Partition,
                    FaultPhase::Start,
                    targets.clone(),
                    note,
                    true,
                );
                self.windows.push((FaultKind::Partition, targets));
                let event = self.verify_cut(event, lost).await;
                self.verify_clients_cut(event, cut_clients).await
            }
            Ok(Err(e)) => {
                let _ = self.flush().await;
                FaultEvent::not_applied(
                    clock,
                    FaultKind::Partition,
                    targets,
                    format!("iptables failed: {e:#}"),
                )
            }
            Err(e) => FaultEvent::not_applied(clock, FaultKind::Partition, targets, format!("{e}")),
        }
    }

    /// A cut's client hosts, then its servers: the clients must be client hosts that exist now
    /// (`holder` is resolved to one before the fault comes here), the servers servers.
    async fn resolve_cut(
        &mut self,
        cut: &Cut,
        client_names: &[String],
    ) -> Result<Vec<String>, String> {
        if client_names.is_empty() {
            return Err(
                "a cut needs clients in hosts of their own, and this run has none: run \
                        its clients as worker processes (workload.processes = \"workers\")"
                    .into(),
            );
        }
        let clients = self
            .resolve(&cut.clients)
            .await
            .map_err(|e| format!("{e:#}"))?;
        if let Some(server) = clients.iter().find(|c| !client_names.contains(c)) {
            return Err(format!(
                "a cut's clients are client hosts ({}), and {server} is not one",
                client_names.join(", ")
            ));
        }
        let servers = self
            .resolve(&cut.servers)
            .await
            .map_err(|e| format!("{e:#}"))?;
        if let Some(client) = servers.iter().find(|s| client_names.contains(s)) {
            return Err(format!(
                "a cut's servers are the backend's servers ({}), and {client} is a client host",
                self.server_names().join(", ")
            ));
        }
        Ok(clients.into_iter().chain(servers).collect())
    }

    async fn blackhole(&mut self, t: &Targets, clock: &RunClock) -> FaultEvent {
        let Some(coordinator) = self.site.coordinator_addr() else {
            return FaultEvent::not_applied(
                clock,
                FaultKind::LinkBlackhole,
                vec![],
                unavailable("link faults"),
            );
        };
        let targets = match self.resolve(t).await {
            Ok(t) => t,
            Err(e) => {
                return FaultEvent::not_applied(
                    clock,
                    FaultKind::LinkBlackhole,
                    vec![],
                    format!("{e:#}"),
                );
            }
        };
        let clients = self.client_hosts();
        let mut g = grudge::Grudge::new();
        for name in &targets {
            let peers = g.entry(name.clone()).or_default();
            if self.spec(name).is_some() {
                // A server: it stops hearing from every client.
                peers.insert(COORDINATOR.into());
                peers.extend(clients.iter().map(|c| c.name.clone()));
            } else {
                // A client host: it stops hearing from every server of the system.
                peers.extend(self.server_names());
            }
        }
        let cut_clients = self.cut_clients(&g, &clients);
        let (hosts, addrs) = self.hosts(coordinator, clients);
        let missing = self.not_entered(&hosts);
        let inside = self.site.hosts_are();
        let lost = self.cut_from_coordinator(&g);
        match tokio::task::spawn_blocking(move || firewall::apply(&hosts, &addrs, &g)).await {
            Ok(Ok(rules)) => {
                self.windows
                    .push((FaultKind::LinkBlackhole, targets.clone()));
                let note = format!(
                    "iptables DROP inside the targets' namespaces ({inside}; {rules} rules): a \
                     server target drops every client's packets (client hosts and the \
                     coordinator, {coordinator}), a client host drops every server's; \
                     connections stay open, nothing arrives; not through a proxy{missing}"
                );
                let event = FaultEvent::now(
                    clock,
                    FaultKind::LinkBlackhole,
                    FaultPhase::Start,
                    targets,
                    note,
                    true,
                );
                let event = self.verify_cut(event, lost).await;
                self.verify_clients_cut(event, cut_clients).await
            }
            Ok(Err(e)) => {
                let _ = self.flush().await;
                FaultEvent::not_applied(
                    clock,
                    FaultKind::LinkBlackhole,
                    targets,
                    format!("iptables failed: {e:#}"),
                )
            }
            Err(e) => {
                FaultEvent::not_applied(clock, FaultKind::LinkBlackhole, targets, format!("{e}"))
            }
        }
    }

    /// The servers that `g` cuts off from the coordinator (they drop its packets).
    fn cut_from_coordinator(&self, g: &grudge::Grudge) -> Vec<&'static ServerSpec> {
        self.servers
            .iter()
            .copied()
            .filter(|s| g.get(s.name).is_some_and(|p| p.contains(COORDINATOR)))
            .collect()
    }

    /// Checks from here (the coordinator) that every server in `lost` has stopped answering:
    /// a TCP connect to its client port must not complete within [`CUT_CHECK`] (a listening
    /// server's kernel accepts in well under a millisecond, paused or not). A server that
    /// still accepts makes `event` not applied, loudly, with the rules flushed and its window
    /// closed (the schedule's heal then has nothing to close).
    async fn verify_cut(
        &mut self,
        mut event: FaultEvent,
        lost: Vec<&'static ServerSpec>,
    ) -> FaultEvent {
        let checks = lost.iter().copied().map(|s| {
            let addr = self.site.topology().client_addr(s);
            async move {
                let connected =
                    tokio::time::timeout(CUT_CHECK, tokio::net::TcpStream::connect(addr)).await;
                (s.name, matches!(connected, Ok(Ok(_))))
            }
        });
        let reached: Vec<&str> = futures_join(checks)
            .await
            .into_iter()
            .filter_map(|(name, reached)| reached.then_some(name))
            .collect();
        if lost.is_empty() {
            return event;
        }
        if reached.is_empty() {
            event.note.push_str(&format!(
                "; checked: {} no longer accept(s) the coordinator's connections",
                lost.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ));
            return event;
        }
        self.windows
            .retain(|(v, t)| !(*v == event.fault && t == &event.targets));
        let _ = self.flush().await;
        event.applied = false;
        event.note = format!(
            "NOT APPLIED: the rules were added, yet {} still accept(s) the coordinator's \
             connections (rules flushed again): {}",
            reached.join(", "),
            event.note
        );
        event
    }

    /// The client hosts that `g` cuts from servers, each with the servers (name, client
    /// address) it must no longer reach.
    fn cut_clients(&self, g: &grudge::Grudge, clients: &[Host]) -> Vec<(Host, Vec<ServerAddr>)> {
        clients
            .iter()
            .filter_map(|h| {
                let drops = g.get(&h.name)?;
                let servers: Vec<ServerAddr> = self
                    .servers
                    .iter()
                    .filter(|s| drops.contains(s.name))
                    .map(|s| (s.name, self.site.topology().client_addr(s)))
                    .collect();
                (!servers.is_empty()).then(|| (h.clone(), servers))
            })
            .collect()
    }

    /// Checks from inside each client host in `cut` (a client container, a managed client
    /// host) that no server it lost accepts its connections within [`CUT_CHECK`]. A server
    /// still reached makes `event` not applied, loudly, as [`Self::verify_cut`] does.
    async fn verify_clients_cut(
        &mut self,
        mut event: FaultEvent,
        cut: Vec<(Host, Vec<ServerAddr>)>,
    ) -> FaultEvent {
        if cut.is_empty() || !event.applied {
            return event;
        }
        let mut checks = Vec::new();
        for (host, servers) in &cut {
            for &(name, addr) in servers {
                let host = host.clone();
                checks.push(async move {
                    let from = host.name.clone();
                    let reached =
                        tokio::task::spawn_blocking(move || host.connects(addr, CUT_CHECK)).await;
                    (from, name, !matches!(reached, Ok(Ok(false))))
                });
            }
        }
        let reached: Vec<String> = futures_join(checks.into_iter())
            .await
            .into_iter()
            .filter_map(|(host, name, reached)| reached.then(|| format!("{host}->{name}")))
            .collect();
        let hosts: Vec<&str> = cut.iter().map(|(h, _)| h.name.as_str()).collect();
        if reached.is_empty() {
            event.note.push_str(&format!(
                "; checked: {} reach(es) none of the servers it lost",
                hosts.join(", ")
            ));
            return event;
        }
        self.windows
            .retain(|(v, t)| !(*v == event.fault && t == &event.targets));
        let _ = self.flush().await;
        event.applied = false;
        event.note = format!(
            "NOT APPLIED: the rules were added, yet from inside the client hosts {} still \
             connect(s) (rules flushed again): {}",
            reached.join(", "),
            event.note
        );
        event
    }

    /// ` (not running, so no rules inside: zk2)` for servers whose namespace cannot be entered.
    fn not_entered(&self, hosts: &BTreeMap<String, Host>) -> String {
        let missing: Vec<&str> = self
            .servers
            .iter()
            .map(|s| s.name)
            .filter(|n| !hosts.contains_key(*n))
            .collect();
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (not running, so no rules inside: {})", missing.join(", "))
        }
    }

    /// Flushes the INPUT and OUTPUT chains of the hosts its rules can be in ([`flush`]);
    /// returns the hosts that had rules.
    pub(crate) async fn flush(&mut self) -> anyhow::Result<Vec<String>> {
        flush(&self.site, &self.servers, &self.extra_clients).await
    }

    async fn heal(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        // Promotions need no firewall: closed in either topology, before the rules (on
        // loopback a heal that closed only promotions records nothing about partitions).
        let mut events = self.heal_promotions(clock).await;
        let mut clocks: Vec<FaultEvent> = self.restore_clocks(clock).into_iter().collect();
        clocks.extend(self.restore_disks(clock).await);
        if (events.is_empty() && clocks.is_empty())
            || !self.windows.is_empty()
            || self.site.coordinator_addr().is_some()
        {
            events.extend(self.heal_rules(clock).await);
        }
        events.extend(clocks);
        events
    }

    async fn heal_rules(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        if self.site.coordinator_addr().is_none() {
            let windows = std::mem::take(&mut self.windows);
            if windows.is_empty() {
                return vec![FaultEvent::not_applied(
                    clock,
                    FaultKind::Partition,
                    vec![],
                    unavailable("partitions"),
                )];
            }
            return windows
                .into_iter()
                .map(|(v, t)| FaultEvent::not_applied(clock, v, t, unavailable("partitions")))
                .collect();
        };
        let measured = self.measure_losses().await;
        // The windows end when the flush begins: from then on a host may be reached again
        // (the hosts are flushed in parallel), so stamping after it would let a client's
        // grant through a healed host fall inside its window.
        let began = clock.now();
        let (ok, note) = match self.flush().await {
            Ok(hosts) if hosts.is_empty() => (true, NO_RULES.to_string()),
            Ok(hosts) => (true, format!("iptables -F INPUT in {}", hosts.join(","))),
            Err(e) => (false, format!("flush failed: {e:#}")),
        };
        let windows = std::mem::take(&mut self.windows);
        let mut rejoined = BTreeMap::new();
        for (kind, targets) in &windows {
            if let Some(fault) = self.offered(*kind) {
                for name in targets {
                    rejoined.insert(name.clone(), self.heal_offered(fault, name).await);
                }
            }
        }
        if windows.is_empty() && ok && note == NO_RULES {
            return Vec::new(); // nothing was in effect: nothing to record
        }
        if windows.is_empty() {
            return vec![
                FaultEvent::now(
                    clock,
                    FaultKind::Partition,
                    FaultPhase::Stop,
                    vec![],
                    note,
                    ok,
                )
                .at(began),
            ];
        }
        windows
            .into_iter()
            .map(|(v, t)| {
                let back: Vec<&(bool, String)> = t.iter().filter_map(|n| rejoined.get(n)).collect();
                let ok = ok && back.iter().all(|(ok, _)| *ok);
                let mut note = note.clone();
                if let Some(m) = measured.iter().find(|(mv, mt, _)| *mv == v && *mt == t) {
                    note.push_str("; ");
                    note.push_str(&m.2);
                }
                for (_, how) in back {
                    note.push_str("; ");
                    note.push_str(how);
                }
                FaultEvent::now(clock, v, FaultPhase::Stop, t, note, ok).at(began)
            })
            .collect()
    }

    /// SIGSTOP / SIGCONT (`docker pause` / `unpause`) of servers and client hosts.
    async fn signal(&mut self, t: &Targets, stop: bool, clock: &RunClock) -> FaultEvent {
        let (verb, phase) = (
            FaultKind::Pause,
            if stop {
                FaultPhase::Start
            } else {
                FaultPhase::Stop
            },
        );
        let names = if !stop && !matches!(t, Targets::Nodes(_)) {
            self.paused.iter().cloned().collect()
        } else {
            match self.resolve(t).await {
                Ok(n) => n,
                Err(e) => return FaultEvent::not_applied(clock, verb, vec![], format!("{e:#}")),
            }
        };
        // A resume's window ends when the first server may run again; a pause's starts once
        // every target is stopped.
        let began = clock.now();
        let mut done = Vec::new();
        let mut missing = Vec::new();
        for name in &names {
            match self.site.pause(name, stop).await {
                Ok(note) => done.push(note),
                Err(why) => {
                    missing.push(why);
                    continue;
                }
            }
            if stop {
                self.paused.insert(name.clone());
            } else {
                self.paused.remove(name);
            }
        }
        let mut note = done.join(", ");
        if !missing.is_empty() {
            note.push_str(&format!("; not running: {}", missing.join(", ")));
        }
        let event = FaultEvent::now(
            clock,
            verb,
            phase,
            names,
            note,
            !done.is_empty() || missing.is_empty(),
        );
        if stop { event } else { event.at(began) }
    }

    async fn kill(&mut self, t: &Targets, clock: &RunClock) -> FaultEvent {
        let names = match self.resolve(t).await {
            Ok(n) => n,
            Err(e) => {
                return FaultEvent::not_applied(clock, FaultKind::Kill, vec![], format!("{e:#}"));
            }
        };
        if let Some(c) = names.iter().find(|n| self.spec(n).is_none()) {
            return FaultEvent::not_applied(
                clock,
                FaultKind::Kill,
                names.clone(),
                format!("{c} is not a server: client processes are killed by the coordinator"),
            );
        }
        let mut done = Vec::new();
        for name in &names {
            if let Ok(note) = self.site.kill(name).await {
                done.push(note);
                self.killed.insert(name.clone());
                self.paused.remove(name);
            }
        }
        let note = done.join(", ");
        FaultEvent::now(
            clock,
            FaultKind::Kill,
            FaultPhase::Start,
            names,
            note,
            !done.is_empty(),
        )
    }

    async fn start(&mut self, t: &Targets, clock: &RunClock) -> FaultEvent {
        let names: Vec<String> = match t.named() {
            Some(n) => n.to_vec(),
            None => self.killed.iter().cloned().collect(),
        };
        let mut done = Vec::new();
        let mut failed = Vec::new();
        for name in &names {
            if self.spec(name).is_none() {
                failed.push(format!("{name}: not a server of this system"));
                continue;
            }
            if self.site.is_running(name) {
                self.killed.remove(name);
                continue; // already running
            }
            match self.site.start(name).await {
                Ok(note) => {
                    self.killed.remove(name);
                    done.push(note);
                }
                Err(e) => failed.push(format!("{name}: {e:#}")),
            }
        }
        let mut note = done.join("; ");
        if !failed.is_empty() {
            note.push_str(&format!("; FAILED: {}", failed.join("; ")));
        }
        FaultEvent::now(
            clock,
            FaultKind::Kill,
            FaultPhase::Stop,
            names,
            note,
            failed.is_empty(),
        )
    }
}

impl<S: Site> Nemesis for ServerNemesis<S> {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            Fault::Partition { split } => vec![self.partition(split, clock).await],
            Fault::Heal => self.heal(clock).await,
            Fault::Pause { targets } => vec![self.signal(targets, true, clock).await],
            // "Resume / start everything" with nothing paused or killed: no event (the final
            // undo steps of every schedule would otherwise record empty windows).
            Fault::Resume { targets }
                if !matches!(targets, Targets::Nodes(_)) && self.paused.is_empty() =>
            {
                Vec::new()
            }
            Fault::Start { targets }
                if !matches!(targets, Targets::Nodes(_)) && self.killed.is_empty() =>
            {
                Vec::new()
            }
            Fault::Resume { targets } => vec![self.signal(targets, false, clock).await],
            Fault::Kill { targets } => vec![self.kill(targets, clock).await],
            Fault::Start { targets } => vec![self.start(targets, clock).await],
            Fault::ClockJump { targets, by } => vec![self.clock_jump(targets, *by, clock).await],
            Fault::Clock {
                targets,
                shift,
                drift,
            } => vec![self.shift_clocks(targets, *shift, *drift, clock).await],
            Fault::Disk {
                targets,
                delay,
                freeze,
            } => vec![self.stall_disks(targets, *delay, *freeze, clock).await],
            Fault::LinkBlackhole { targets } => vec![self.blackhole(targets, clock).await],
            Fault::RedisFailover => vec![self.system_fault(fault.kind(), clock).await],
            Fault::Promote => vec![self.promote(clock).await],
            Fault::PacketLoss {
                targets,
                rate,
                mode,
            } => vec![self.packet_loss(targets, *rate, *mode, clock).await],
            Fault::LinkDelay { .. } => vec![FaultEvent::not_applied(
                clock,
                FaultKind::LinkDelay,
                vec![],
                "link delay is a latency toxic on the run's link proxies, and none stand \
                 between the clients and these servers (tc netem is unavailable on this \
                 kernel, so the servers' own links cannot be delayed)"
                    .into(),
            )],
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        let mut events = Vec::new();
        if self.site.coordinator_addr().is_some() || !self.windows.is_empty() {
            events.extend(self.heal(clock).await);
        }
        events.extend(self.restore_clocks(clock));
        events.extend(self.restore_disks(clock).await);
        // Everything stopped, whoever stopped it (a crashed earlier run included).
        for s in &self.servers {
            if self.site.is_paused(s.name) {
                self.paused.insert(s.name.to_string());
            }
        }
        if !self.paused.is_empty() {
            events.push(self.signal(&Targets::All, false, clock).await);
        }
        for s in &self.servers {
            if !self.site.is_running(s.name) {
                self.killed.insert(s.name.to_string());
            }
        }
        if !self.killed.is_empty() {
            events.push(self.start(&Targets::All, clock).await);
        }
        events
    }
}

const NO_RULES: &str = "no rules were in effect";
/// How long a connect to a server that a fault cut off from the coordinator must stay
/// unanswered for the cut to count as effective.
const CUT_CHECK: Duration = Duration::from_millis(300);

/// A server's name and client address.
type ServerAddr = (&'static str, std::net::SocketAddr);

/// Awaits every future, concurrently.
async fn futures_join<T: Send + 'static>(
    futures: impl Iterator<Item = impl Future<Output = T> + Send + 'static>,
) -> Vec<T> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        if let Ok(t) = h.await {
            out.push(t);
        }
    }
    out
}

/// Where a fault's rules go (the namespaces of `servers` and of `clients` that can be entered
/// now: a container that does not run has none) and every host's address, the coordinator's
/// included.
pub(crate) fn hosts_of<S: Site>(
    site: &S,
    servers: &[&'static ServerSpec],
    coordinator: Ipv4Addr,
    clients: Vec<Host>,
) -> (BTreeMap<String, Host>, BTreeMap<String, Ipv4Addr>) {
    let mut hosts = BTreeMap::new();
    let mut addrs = BTreeMap::from([(COORDINATOR.to_string(), coordinator)]);
    for s in servers {
        if let std::net::IpAddr::V4(ip) = site.topology().ip(s) {
            addrs.insert(s.name.to_string(), ip);
        }
        if let Some(h) = site.server_host(s) {
            hosts.insert(s.name.to_string(), h);
        }
    }
    for h in clients {
        addrs.insert(h.name.clone(), h.addr);
        hosts.insert(h.name.clone(), h);
    }
    (hosts, addrs)
}

/// Flushes the INPUT and OUTPUT chains of the hosts rules can be in: those of `servers` (the
/// nemesis's own, where every rule it adds goes) and the client hosts, `extra_clients`
/// included; returns the hosts that had rules. Not every host of the site: on the compose
/// cluster each host is a `docker exec`, and a heal that listed the firewall of all 22
/// containers took seconds on a loaded machine, which delayed every later fault of the
/// schedule by as much.
pub(crate) async fn flush<S: Site>(
    site: &S,
    servers: &[&'static ServerSpec],
    extra_clients: &[Host],
) -> anyhow::Result<Vec<String>> {
    let mut hosts: Vec<Host> = servers.iter().filter_map(|s| site.server_host(s)).collect();
    hosts.extend(client_hosts(site, extra_clients));
    tokio::task::spawn_blocking(move || firewall::flush_all(hosts)).await?
}

/// The client hosts of `site` that exist now, and `extra_clients` (hosts added to the run, such
/// as Swarm tasks' containers), each once.
fn client_hosts<S: Site>(site: &S, extra_clients: &[Host]) -> Vec<Host> {
    let mut hosts: Vec<Host> = site
        .client_hosts()
        .into_iter()
        .filter(|h| extra_clients.iter().all(|e| e.name != h.name))
        .collect();
    hosts.extend(extra_clients.iter().cloned());
    hosts
}

pub(crate) fn unavailable(what: &str) -> String {
    format!(
        "{what} need the netns topology (root and network namespaces); this cluster runs on \
         loopback, so the fault was NOT applied"
    )
}
