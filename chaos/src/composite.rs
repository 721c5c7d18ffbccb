//! [`Composite`]: the nemeses of one run as one, each fault sent where [`Fault::route`] says.
//!
//! A run has up to three nemeses: the [`ClientNemesis`] (signals to worker processes), a
//! server nemesis (the [`ServerNemesis`](crate::ServerNemesis) of the managed or compose
//! cluster, or [`Unreachable`] for an external one) and, when its clients go through link
//! proxies, the [`LinkNemesis`]. Which one owns a fault is a fact of the fault's kind, decided
//! in `lockbench-core` next to its verb and inverse; the `match` here is over that
//! [`Route`], so it is exhaustive and a new kind cannot fall through to the wrong nemesis.
//!
//! Every fault window is recorded as a `start` event and a `stop` event with the *same* verb and
//! targets (`pause` ... `pause`), so the availability analysis can pair them.

use crate::{ClientNemesis, LinkNemesis, Nemesis};
use lockbench_core::{Fault, FaultEvent, Route, RunClock, Targets};
use std::time::{Duration, Instant};

/// Routes faults on client *processes* (pause, resume, kill of workers) to `client`, faults on
/// servers or on the network to `server`: partitions and packet faults on client hosts are
/// firewall rules in the namespaces, which the server nemesis owns (it sees every client host
/// that exists when the fault starts); `holder` is resolved to its worker's host here first.
/// Link faults go to `links` when the run has link proxies.
pub struct Composite<S> {
    /// Owns faults on client processes.
    pub client: ClientNemesis,
    /// Owns faults on servers and on the network.
    pub server: S,
    /// Owns link faults when the run's clients go through link proxies (then `link-delay` and
    /// `link-blackhole` are toxics on the proxies, and `heal` clears them too).
    pub links: Option<LinkNemesis>,
}

/// How long a fault aimed at the lock's holder waits for a client to hold it: a recipe that
/// polls, or a short hold, leaves moments when nobody holds a lock, and the fault then lands
/// on the next holder instead of being recorded as not applied.
const HOLDER_WAIT: Duration = Duration::from_secs(1);

impl<S: Nemesis> Composite<S> {
    /// The client hosts of the worker holding a lock now, or as soon as one does within
    /// [`HOLDER_WAIT`].
    async fn holder_hosts(&mut self) -> Result<Vec<String>, String> {
        let deadline = Instant::now() + HOLDER_WAIT;
        loop {
            match self.client.resolve(&Targets::Holder) {
                Ok(ws) => return Ok(ws.iter().map(|w| w.name.clone()).collect()),
                Err(why) if Instant::now() >= deadline => {
                    return Err(format!("{why} (waited {HOLDER_WAIT:?} for one)"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            }
        }
    }
}

impl<S: Nemesis> Nemesis for Composite<S> {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault.route() {
            Route::Everyone => {
                let mut out = self.client.apply(fault, clock).await;
                out.extend(self.server.apply(fault, clock).await);
                if let Some(links) = self.links.as_mut() {
                    out.extend(links.apply(fault, clock).await);
                }
                out
            }
            Route::Clients => self.client.apply(fault, clock).await,
            Route::Servers => self.server.apply(fault, clock).await,
            Route::Firewall => {
                if fault.targets() != Some(&Targets::Holder) {
                    return self.server.apply(fault, clock).await;
                }
                match self.holder_hosts().await {
                    Ok(names) => {
                        let on_host = fault.with_targets(Targets::Nodes(names));
                        self.server
                            .apply(&on_host.expect("has targets"), clock)
                            .await
                    }
                    Err(why) => vec![FaultEvent::not_applied(clock, fault.kind(), vec![], why)],
                }
            }
            Route::Proxies => match self.links.as_mut() {
                Some(links) => links.apply(fault, clock).await,
                None => self.server.apply(fault, clock).await,
            },
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        let mut out = self.client.heal_all(clock).await;
        out.extend(self.server.heal_all(clock).await);
        if let Some(links) = self.links.as_mut() {
            out.extend(links.heal_all(clock).await);
        }
        out
    }
}

/// The server nemesis of a cluster lockbench cannot reach (`--cluster external:FILE`: its
/// machines are someone else's; compose through its published ports: no container address or
/// namespace is reachable), so no server can be signalled, restarted or firewalled, and
/// every server fault is recorded as not applied, with the reason. Client faults still work
/// (the workers are lockbench's own processes), and so do link faults when the run has proxies.
pub struct Unreachable {
    why: std::borrow::Cow<'static, str>,
}

impl Unreachable {
    /// An external cluster's servers.
    pub fn external() -> Unreachable {
        Unreachable {
            why: "an external cluster's machines cannot be reached: no server fault (signals, \
                  restarts, firewall rules) can be applied to them"
                .into(),
        }
    }

    /// Servers no fault can reach, for the reason `why` (recorded on every fault).
    pub fn because(why: String) -> Unreachable {
        Unreachable { why: why.into() }
    }
}

impl Nemesis for Unreachable {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            // Nothing was done, so nothing to undo.
            Fault::Heal | Fault::Resume { .. } | Fault::Start { .. } => Vec::new(),
            Fault::Pause { .. }
            | Fault::Kill { .. }
            | Fault::Partition { .. }
            | Fault::ClockJump { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::LinkDelay { .. }
            | Fault::LinkBlackhole { .. }
            | Fault::PacketLoss { .. }
            | Fault::RedisFailover
            | Fault::Promote => vec![FaultEvent::not_applied(
                clock,
                fault.kind(),
                vec![],
                self.why.to_string(),
            )],
        }
    }

    async fn heal_all(&mut self, _clock: &RunClock) -> Vec<FaultEvent> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{FaultKind, FaultPhase, PartitionSpec};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// A server nemesis that records the kinds it was given (harness logic: no servers).
    #[derive(Default)]
    struct Recorder(Vec<FaultKind>);

    impl Nemesis for Recorder {
        async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
            self.0.push(fault.kind());
            let targets = fault
                .targets()
                .map(|t| format!("{t:?}"))
                .into_iter()
                .collect();
            vec![FaultEvent::now(
                clock,
                fault.kind(),
                FaultPhase::Start,
                targets,
                "",
                true,
            )]
        }
        async fn heal_all(&mut self, _clock: &RunClock) -> Vec<FaultEvent> {
            Vec::new()
        }
    }

    fn composite() -> Composite<Recorder> {
        let holding: Arc<[AtomicBool]> = Arc::from(vec![AtomicBool::new(false)]);
        Composite {
            client: ClientNemesis::new(Vec::new(), holding),
            server: Recorder::default(),
            links: None,
        }
    }

    /// Server faults reach the server nemesis, client faults never do, and `holder` is not a
    /// server target: with no worker holding, isolating it is not applied, with the reason.
    #[tokio::test]
    async fn faults_reach_the_nemesis_their_kind_routes_to() {
        let clock = RunClock::start();
        let mut n = composite();
        let pause_leader = Fault::Pause {
            targets: Targets::Leader,
        };
        let pause_holder = Fault::Pause {
            targets: Targets::Holder,
        };
        let isolate_holder = Fault::Partition {
            split: PartitionSpec::Isolate(Targets::Holder),
        };
        let delay = Fault::LinkDelay {
            targets: Targets::One,
            latency: std::time::Duration::from_millis(5),
            jitter: std::time::Duration::ZERO,
        };
        assert!(n.apply(&pause_leader, &clock).await[0].applied);
        let ev = n.apply(&pause_holder, &clock).await;
        assert!(
            !ev[0].applied && ev[0].note.contains("worker process"),
            "{ev:?}"
        );
        let ev = n.apply(&isolate_holder, &clock).await;
        assert!(
            !ev[0].applied && ev[0].note.contains("worker process"),
            "{ev:?}"
        );
        // No proxies in this run: the link fault goes to the server nemesis.
        assert!(n.apply(&delay, &clock).await[0].applied);
        n.apply(&Fault::Heal, &clock).await;
        assert_eq!(
            n.server.0,
            [FaultKind::Pause, FaultKind::LinkDelay, FaultKind::Heal]
        );
    }
}
