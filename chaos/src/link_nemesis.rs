//! [`LinkNemesis`]: `link-delay` and `link-blackhole` applied through the run's
//! [`LinkProxies`].
//!
//! Targets: `targets = "leader"` (or `one`, `all`, ...) picks servers the usual way and hits
//! every client's link to them. `targets = { nodes = [...] }` may name servers *and* clients
//! (`coordinator` for the in-process slots, `client1` ... for worker processes): the fault
//! hits the links between the named clients and the named servers; naming no client means
//! every client, naming no server means every server of the system. Each start is recorded
//! with the resolved names (servers first, then the clients when some were named) and the
//! links in the note; `heal` removes every toxic and closes the windows with the same verb and
//! targets.

use crate::{LinkProxies, Managed, Nemesis, Reach, targets};
use lockbench_cluster::{Cluster, Group, ServerSpec};
use lockbench_core::{Fault, FaultEvent, FaultKind, FaultPhase, RunClock, Targets};
use rand::RngCore;
use std::sync::Arc;
use std::time::Duration;

/// Applies link faults to the proxies of one run.
pub struct LinkNemesis {
    proxies: Arc<LinkProxies>,
    reach: Box<dyn Reach>,
    servers: Vec<&'static ServerSpec>,
    rng: Box<dyn RngCore + Send>,
    /// Open windows: (verb, targets).
    windows: Vec<(FaultKind, Vec<String>)>,
}

enum Toxic {
    Latency(Duration, Duration),
    Blackhole,
}

impl LinkNemesis {
    /// A nemesis over `proxies` (shared: the run keeps them alive until its clients are done),
    /// whose servers are `group`'s in `cluster` (for `leader` and seeded choices).
    pub fn new(
        proxies: Arc<LinkProxies>,
        cluster: &Cluster,
        group: Group,
        rng: impl RngCore + Send + 'static,
    ) -> LinkNemesis {
        let site = Managed::new(cluster.clone());
        let servers = site.servers(group);
        LinkNemesis::on(proxies, site, servers, rng)
    }

    /// A nemesis over `proxies` to `servers`, which `reach` locates (for `leader`).
    pub fn on(
        proxies: Arc<LinkProxies>,
        reach: impl Reach + 'static,
        servers: Vec<&'static ServerSpec>,
        rng: impl RngCore + Send + 'static,
    ) -> LinkNemesis {
        LinkNemesis {
            proxies,
            reach: Box::new(reach),
            servers,
            rng: Box::new(rng),
            windows: Vec::new(),
        }
    }

    /// The links `targets` names: (servers, clients named explicitly).
    async fn links(&mut self, t: &Targets) -> anyhow::Result<(Vec<String>, Vec<String>)> {
        let servers = self.proxies.server_names();
        let clients = self.proxies.client_names();
        match t {
            Targets::Nodes(names) => {
                let (mut s, mut c) = (Vec::new(), Vec::new());
                for n in names {
                    if servers.contains(n) {
                        s.push(n.clone());
                    } else if clients.contains(n) {
                        c.push(n.clone());
                    } else {
                        anyhow::bail!(
                            "no proxied server or client named {n} (servers: {}; clients: {})",
                            servers.join(", "),
                            clients.join(", ")
                        );
                    }
                }
                if s.is_empty() {
                    s = servers;
                }
                Ok((s, c))
            }
            other => {
                let s = targets::resolve(other, &*self.reach, &self.servers, &[], &mut *self.rng)
                    .await?;
                Ok((s, Vec::new()))
            }
        }
    }

    async fn start(
        &mut self,
        verb: FaultKind,
        t: &Targets,
        toxic: Toxic,
        clock: &RunClock,
    ) -> FaultEvent {
        let (servers, named_clients) = match self.links(t).await {
            Ok(l) => l,
            Err(e) => {
                return FaultEvent::not_applied(clock, verb, vec![], format!("{e:#}"));
            }
        };
        let clients = if named_clients.is_empty() {
            self.proxies.client_names()
        } else {
            named_clients.clone()
        };
        let mut links = Vec::new();
        let mut failed = Vec::new();
        for c in &clients {
            for s in &servers {
                let Some(p) = self.proxies.get(c, s) else {
                    continue;
                };
                let r = match toxic {
                    Toxic::Latency(l, j) => p.set_latency(l, j).await,
                    Toxic::Blackhole => p.blackhole().await,
                };
                match r {
                    Ok(()) => links.push(format!("{} (via {})", p.name(), p.addr())),
                    Err(e) => failed.push(format!("{}: {e:#}", p.name())),
                }
            }
        }
        let what = match toxic {
            Toxic::Latency(l, j) => format!(
                "latency toxic {} ± {} on the server's replies (once per round trip)",
                humantime(l),
                humantime(j)
            ),
            Toxic::Blackhole => {
                "black-hole toxic (Toxiproxy timeout 0): bytes swallowed both ways, connections kept"
                    .to_string()
            }
        };
        let mut note = format!("{what}, in-process proxy, links: {}", links.join(", "));
        if !failed.is_empty() {
            note.push_str(&format!("; FAILED: {}", failed.join("; ")));
        }
        let mut targets = servers;
        targets.extend(named_clients);
        let applied = !links.is_empty();
        if applied {
            self.windows.push((verb, targets.clone()));
        } else if failed.is_empty() {
            note.push_str("; no proxied link matches (no client connected through a proxy)");
        }
        FaultEvent::now(clock, verb, FaultPhase::Start, targets, note, applied)
    }

    async fn heal(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        let mut failed = Vec::new();
        for p in self.proxies.all() {
            if let Err(e) = p.clear().await {
                failed.push(format!("{e:#}"));
            }
        }
        let note = if failed.is_empty() {
            "every toxic removed from the link proxies".to_string()
        } else {
            format!("FAILED to clear: {}", failed.join("; "))
        };
        std::mem::take(&mut self.windows)
            .into_iter()
            .map(|(v, t)| {
                FaultEvent::now(
                    clock,
                    v,
                    FaultPhase::Stop,
                    t,
                    note.clone(),
                    failed.is_empty(),
                )
            })
            .collect()
    }
}

impl Nemesis for LinkNemesis {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            Fault::LinkDelay {
                targets,
                latency,
                jitter,
            } => {
                let toxic = Toxic::Latency(*latency, *jitter);
                vec![
                    self.start(FaultKind::LinkDelay, targets, toxic, clock)
                        .await,
                ]
            }
            Fault::LinkBlackhole { targets } => {
                vec![
                    self.start(FaultKind::LinkBlackhole, targets, Toxic::Blackhole, clock)
                        .await,
                ]
            }
            Fault::Heal => self.heal(clock).await,
            // A schedule's final undo of processes: no proxy was stopped or killed.
            Fault::Resume { .. } | Fault::Start { .. } => Vec::new(),
            Fault::Partition { .. }
            | Fault::Pause { .. }
            | Fault::Kill { .. }
            | Fault::ClockJump { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::PacketLoss { .. }
            | Fault::RedisFailover
            | Fault::Promote => vec![FaultEvent::not_applied(
                clock,
                fault.kind(),
                vec![],
                "the link nemesis applies link faults only".into(),
            )],
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        self.heal(clock).await
    }
}

fn humantime(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}
