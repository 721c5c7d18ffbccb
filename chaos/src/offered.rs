//! Faults a system offers ([`SystemFault`], from
//! [`System::faults`](lockbench_core::System::faults): Redis's `redis-failover`): found by
//! their verb among the faults of the nemesis's servers' system, and applied through a
//! [`FaultAccess`] over the [`Site`].
//!
//! Why here and in this shape: the fault's protocol is the system's, in its crate; its
//! mechanics are this crate's and the same for any such fault. The access cuts a link with
//! the same iptables rules partitions use ([`crate::firewall`]), kills and restarts through
//! the site, and asks servers through [`crate::probe`] (from inside their hosts, over TLS on
//! a secure cluster). It records what it killed and brought back, which the nemesis then
//! counts as its own (a server killed here is restarted by `heal_all`, like any other). An
//! applied fault opens a window on its targets; `heal` flushes the rules and then calls the
//! fault's own heal for each target.

use crate::firewall;
use crate::grudge::Grudge;
use crate::probe::Probes;
use crate::server_nemesis::{ServerNemesis, unavailable};
use crate::site::Site;
use lockbench_cluster::{Host, ServerSpec};
use lockbench_core::{
    FaultAccess, FaultEvent, FaultKind, FaultPhase, Pending, RunClock, ServerAccess, SystemFault,
};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Mutex, OnceLock};

impl<S: Site> ServerNemesis<S> {
    /// The fault of `kind` that the servers' system offers for their group.
    pub(crate) fn offered(&self, kind: FaultKind) -> Option<&'static dyn SystemFault> {
        let first = self.servers.first()?;
        let faults = first.system.faults().iter().copied();
        faults
            .filter(|f| f.kind() == kind)
            .find(|f| f.acts_on(first.group))
    }

    /// Applies the offered fault of `kind`, or records why not (the servers' system does
    /// not offer it for their group; it cuts links and this site has no hosts to cut in).
    pub(crate) async fn system_fault(&mut self, kind: FaultKind, clock: &RunClock) -> FaultEvent {
        let Some(fault) = self.offered(kind) else {
            return FaultEvent::not_applied(clock, kind, vec![], offered_elsewhere(kind));
        };
        let coordinator = self.site.coordinator_addr();
        if fault.cuts_links() && coordinator.is_none() {
            return FaultEvent::not_applied(clock, kind, vec![], unavailable(kind.name()));
        }
        let access = self.access(coordinator);
        if fault.cuts_links() {
            // The hosts a cut goes in are looked up before the fault starts waiting for its
            // moment (on compose each is a question to Docker).
            access.rules();
        }
        let event = fault.apply(&access, &self.servers, clock).await;
        self.absorb(access.into_records());
        if event.applied && event.phase == FaultPhase::Start {
            self.windows.push((fault.kind(), event.targets.clone()));
        }
        event
    }

    /// Undoes what `fault`'s window did to `target` (after the rules were flushed): whether
    /// its group is whole again, and how.
    pub(crate) async fn heal_offered(
        &mut self,
        fault: &'static dyn SystemFault,
        target: &str,
    ) -> (bool, String) {
        let access = self.access(self.site.coordinator_addr());
        let healed = fault.heal(&access, &self.servers, target).await;
        self.absorb(access.into_records());
        healed
    }

    /// Counts what an offered fault killed and brought back as this nemesis's own.
    fn absorb(&mut self, records: Records) {
        self.killed.extend(records.killed);
        for name in records.back {
            self.killed.remove(&name);
        }
    }

    fn access(&self, coordinator: Option<Ipv4Addr>) -> SiteAccess<'_, S> {
        SiteAccess {
            site: &self.site,
            probes: Probes(&self.site),
            servers: &self.servers,
            extra_clients: &self.extra_clients,
            coordinator,
            rules: OnceLock::new(),
            records: Mutex::default(),
        }
    }
}

/// What the offering systems say of servers their fault does not act on.
fn offered_elsewhere(kind: FaultKind) -> String {
    let offers: Vec<&str> = lockbench_registry::SYSTEMS
        .iter()
        .flat_map(|s| s.faults())
        .filter(|f| f.kind() == kind)
        .map(|f| f.elsewhere())
        .collect();
    if offers.is_empty() {
        format!("no system offers {kind}")
    } else {
        offers.join("; ")
    }
}

/// The hosts a cut's rules go in, and every host's address.
type Rules = (BTreeMap<String, Host>, BTreeMap<String, Ipv4Addr>);

/// What an offered fault did that the nemesis must know.
#[derive(Default)]
struct Records {
    /// Servers it killed.
    killed: Vec<String>,
    /// Servers it restarted, or found running, when it brought them back.
    back: Vec<String>,
}

/// The [`FaultAccess`] of one offered fault's apply or heal, over the nemesis's site.
struct SiteAccess<'a, S: Site> {
    site: &'a S,
    probes: Probes<'a>,
    servers: &'a [&'static ServerSpec],
    extra_clients: &'a [Host],
    /// The coordinator's address, where links can be cut.
    coordinator: Option<Ipv4Addr>,
    rules: OnceLock<Option<Rules>>,
    records: Mutex<Records>,
}

impl<S: Site> SiteAccess<'_, S> {
    /// Where cuts go, looked up on first use; `None` without hosts.
    fn rules(&self) -> Option<&Rules> {
        let rules = self.rules.get_or_init(|| {
            let coordinator = self.coordinator?;
            Some(crate::server_nemesis::hosts_of(
                self.site,
                self.servers,
                coordinator,
                Vec::new(),
            ))
        });
        rules.as_ref()
    }

    fn record(&self, what: impl FnOnce(&mut Records)) {
        what(&mut self.records.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn into_records(self) -> Records {
        self.records.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: Site> FaultAccess for SiteAccess<'_, S> {
    fn probes(&self) -> &dyn ServerAccess {
        &self.probes
    }

    fn cut<'a>(&'a self, host: &'a str, peer: &'a str) -> Pending<'a, Result<(), String>> {
        Box::pin(async move {
            let Some((hosts, addrs)) = self.rules().cloned() else {
                return Err(unavailable("link cuts"));
            };
            let mut g = Grudge::new();
            g.entry(host.to_string())
                .or_default()
                .insert(peer.to_string());
            match tokio::task::spawn_blocking(move || firewall::apply(&hosts, &addrs, &g)).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => {
                    let _ =
                        crate::server_nemesis::flush(self.site, self.servers, self.extra_clients)
                            .await;
                    Err(format!("iptables: {e:#}"))
                }
                Err(e) => Err(e.to_string()),
            }
        })
    }

    fn heal_cuts(&self) -> Pending<'_, ()> {
        Box::pin(async move {
            let _ = crate::server_nemesis::flush(self.site, self.servers, self.extra_clients).await;
        })
    }

    fn kill<'a>(&'a self, name: &'a str) -> Pending<'a, Result<String, String>> {
        Box::pin(async move {
            let note = self.site.kill(name).await?;
            self.record(|r| r.killed.push(name.to_string()));
            Ok(note)
        })
    }

    fn restart<'a>(&'a self, name: &'a str) -> Pending<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            let note = if self.site.is_running(name) {
                None
            } else {
                let started = self.site.start(name).await;
                Some(started.map_err(|e| format!("{e:#}"))?)
            };
            self.record(|r| r.back.push(name.to_string()));
            Ok(note)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::nowhere::Nowhere;
    use crate::{Nemesis, ServerNemesis};
    use lockbench_cluster::{SERVERS, ServerSpec, Topology};
    use lockbench_core::{Fault, RunClock};
    use rand::SeedableRng;

    fn nemesis(group: &str) -> ServerNemesis<Nowhere> {
        let servers: Vec<&'static ServerSpec> = SERVERS
            .iter()
            .copied()
            .filter(|s| s.group.name() == group)
            .collect();
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        ServerNemesis::on(Nowhere(Topology::Loopback), servers, rng)
    }

    /// On another system's servers the failover is refused in the words of the system that
    /// offers it; on its pair without hosts to cut in, as a fault that needs the netns
    /// topology. Neither opens a window.
    #[tokio::test]
    async fn an_offered_fault_is_refused_where_it_cannot_act() {
        let clock = RunClock::start();
        let mut zk = nemesis("zookeeper");
        let ev = zk.apply(&Fault::RedisFailover, &clock).await;
        assert_eq!(ev.len(), 1);
        assert!(!ev[0].applied && ev[0].fault == lockbench_core::FaultKind::RedisFailover);
        assert_eq!(
            ev[0].note,
            "redis-failover acts on the failover pair (backend redis-sentinel: fo1/fo2 under \
             three Sentinels), not on this backend's servers"
        );
        let mut pair = nemesis("failover");
        let ev = pair.apply(&Fault::RedisFailover, &clock).await;
        assert!(!ev[0].applied);
        assert!(
            ev[0]
                .note
                .starts_with("redis-failover need the netns topology"),
            "{}",
            ev[0].note
        );
        assert!(zk.windows.is_empty() && pair.windows.is_empty());
        assert_eq!(
            super::offered_elsewhere(lockbench_core::FaultKind::Resign),
            "no system offers resign"
        );
    }
}
