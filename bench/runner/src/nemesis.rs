//! The nemeses the runner composes: one for client worker processes, one for servers, routed
//! by target. On the managed cluster the server side is the chaos crate's `ServerNemesis`;
//! on an external cluster (whose machines lockbench cannot reach) it is the stand-in below.
//!
//! - [`ClientNemesis`] owns faults on clients: `holder` (the worker whose client holds a lock
//!   now, as its shipped ops tell) and named client hosts (`client3`). Pause and resume are
//!   SIGSTOP/SIGCONT of the worker process, kill is SIGKILL followed by a fresh worker process
//!   for the same slot ([`crate::respawn`]; the kill window closes when it is connected).
//! - [`StandInServerNemesis`] does only what needs no namespaces: SIGSTOP/SIGCONT of the
//!   managed cluster's server processes of the backend's system. Every other server fault
//!   (partition, kill/start, clock jump, link faults) is reported `applied = false` with a note,
//!   never silently skipped (with no state directory, as for an external cluster, nothing at
//!   all can be signalled, and every server fault says so).
//! - [`Composite`] sends a fault to the nemesis that owns its targets; `heal` and the final
//!   `heal_all` go to both.
//!
//! Every fault window is recorded as a `start` event and a `stop` event with the *same* verb and
//! targets (`pause` ... `pause`), so the availability analysis can pair them.

use lockbench_chaos::Nemesis;
use lockbench_core::{BackendKind, Fault, FaultEvent, FaultPhase, RunClock, Seed, Stream, Targets};
use lockbench_workloads::worker::WorkerHandle;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `true` when `targets` name client processes rather than servers.
pub fn is_client_target(targets: &Targets) -> bool {
    match targets {
        Targets::Holder => true,
        Targets::Nodes(names) => !names.is_empty() && names.iter().all(|n| n.starts_with("client")),
        _ => false,
    }
}

/// Faults on client worker processes.
pub struct ClientNemesis {
    workers: Vec<WorkerHandle>,
    holding: Arc<[AtomicBool]>,
    /// Stopped workers: (names as recorded, pids).
    paused: Vec<(Vec<String>, Vec<Pid>)>,
    /// Restarts killed workers (`None`: they stay dead).
    respawner: Option<crate::respawn::Respawner>,
}

impl ClientNemesis {
    /// A nemesis over `workers`; `holding` says per slot whether it holds a lock now.
    pub fn new(workers: Vec<WorkerHandle>, holding: Arc<[AtomicBool]>) -> ClientNemesis {
        ClientNemesis {
            workers,
            holding,
            paused: Vec::new(),
            respawner: None,
        }
    }

    /// Restarts killed workers with `respawner`.
    pub fn with_respawner(mut self, respawner: crate::respawn::Respawner) -> ClientNemesis {
        self.respawner = Some(respawner);
        self
    }

    /// SIGKILL of the `names` workers, then a fresh worker for each (when a respawner is set).
    async fn kill(&mut self, names: Vec<String>, clock: &RunClock) -> Vec<FaultEvent> {
        let victims: Vec<WorkerHandle> = self
            .workers
            .iter()
            .filter(|w| names.contains(&w.name))
            .cloned()
            .collect();
        let ok = victims.iter().all(|w| w.signal(Signal::SIGKILL).is_ok());
        let procs: Vec<String> = victims.iter().map(|w| w.process()).collect();
        let mut out = vec![FaultEvent::now(
            clock,
            "kill",
            FaultPhase::Start,
            names.clone(),
            format!(
                "SIGKILL of worker {} (their unsent stats are lost)",
                procs.join(", ")
            ),
            ok,
        )];
        self.paused
            .retain(|(n, _)| !n.iter().any(|n| names.contains(n)));
        let Some(respawner) = &self.respawner else {
            return out;
        };
        for victim in victims {
            let Some(&slot) = victim.slots.first() else {
                continue;
            };
            let (note, ok) = match respawner.respawn(slot).await {
                Ok(fresh) => {
                    let note = format!(
                        "{} restarted as a fresh worker process, pid {} (was {})",
                        fresh.name, fresh.pid, victim.pid
                    );
                    if let Some(w) = self.workers.iter_mut().find(|w| w.name == fresh.name) {
                        *w = fresh;
                    }
                    (note, true)
                }
                Err(e) => (format!("NOT restarted: {e}"), false),
            };
            out.push(FaultEvent::now(
                clock,
                "kill",
                FaultPhase::Stop,
                vec![victim.name.clone()],
                note,
                ok,
            ));
        }
        out
    }

    fn resolve(&self, targets: &Targets) -> Result<Vec<&WorkerHandle>, String> {
        if self.workers.is_empty() {
            return Err(
                "no client runs as a worker process (set workload.processes = \"workers\")".into(),
            );
        }
        let found: Vec<&WorkerHandle> = match targets {
            Targets::Holder => self
                .workers
                .iter()
                .filter(|w| {
                    w.slots
                        .iter()
                        .any(|&s| self.holding[s as usize].load(Ordering::Relaxed))
                })
                .take(1)
                .collect(),
            Targets::Nodes(names) => self
                .workers
                .iter()
                .filter(|w| names.contains(&w.name))
                .collect(),
            _ => self.workers.iter().collect(),
        };
        if found.is_empty() {
            Err(format!("no client process matches {targets:?} right now"))
        } else {
            Ok(found)
        }
    }

    fn resume(&mut self, clock: &RunClock, only: Option<&[String]>) -> Vec<FaultEvent> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for (names, pids) in self.paused.drain(..) {
            if only.is_some_and(|o| !names.iter().any(|n| o.contains(n))) {
                keep.push((names, pids));
                continue;
            }
            let ok = signal_all(&pids, Signal::SIGCONT);
            out.push(FaultEvent::now(
                clock,
                "pause",
                FaultPhase::Stop,
                names,
                "SIGCONT of the worker process",
                ok,
            ));
        }
        self.paused = keep;
        out
    }
}

impl Nemesis for ClientNemesis {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            Fault::Pause { targets } => match self.resolve(targets) {
                Ok(ws) => {
                    let names: Vec<String> = ws.iter().map(|w| w.name.clone()).collect();
                    let pids: Vec<Pid> = ws.iter().map(|w| w.pid).collect();
                    let ok = ws.iter().all(|w| w.signal(Signal::SIGSTOP).is_ok());
                    let procs: Vec<String> = ws.iter().map(|w| w.process()).collect();
                    let note = format!("SIGSTOP of worker {}", procs.join(", "));
                    self.paused.push((names.clone(), pids));
                    vec![FaultEvent::now(
                        clock,
                        "pause",
                        FaultPhase::Start,
                        names,
                        note,
                        ok,
                    )]
                }
                Err(why) => vec![FaultEvent::now(
                    clock,
                    "pause",
                    FaultPhase::Start,
                    vec![],
                    why,
                    false,
                )],
            },
            Fault::Resume { targets } => match targets {
                Targets::Nodes(names) => self.resume(clock, Some(names)),
                _ => self.resume(clock, None),
            },
            Fault::Kill { targets } => match self.resolve(targets) {
                Ok(ws) => {
                    let names: Vec<String> = ws.iter().map(|w| w.name.clone()).collect();
                    self.kill(names, clock).await
                }
                Err(why) => vec![FaultEvent::now(
                    clock,
                    "kill",
                    FaultPhase::Start,
                    vec![],
                    why,
                    false,
                )],
            },
            // A killed worker was restarted right after the kill: nothing left to start.
            Fault::Start { .. } => Vec::new(),
            Fault::Heal => Vec::new(),
            other => vec![FaultEvent::now(
                clock,
                other.verb(),
                FaultPhase::Start,
                vec![],
                "partitions and link faults are applied by the server nemesis, not to worker processes",
                false,
            )],
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        self.resume(clock, None)
    }
}

/// SIGSTOP/SIGCONT of the managed cluster's servers; everything else reported as not applied.
pub struct StandInServerNemesis {
    backend: BackendKind,
    state_dir: Option<PathBuf>,
    rng: ChaCha8Rng,
    paused: Vec<(Vec<String>, Vec<Pid>)>,
}

impl StandInServerNemesis {
    /// A nemesis over the servers `backend` uses, found in the managed cluster at `state_dir`
    /// (`None` for an external cluster: nothing can be signalled then).
    pub fn new(backend: BackendKind, state_dir: Option<PathBuf>, seed: u64) -> Self {
        StandInServerNemesis {
            backend,
            state_dir,
            rng: Seed(seed).rng(Stream::ServerTargets),
            paused: Vec::new(),
        }
    }

    /// The backend's servers: (name, pid, is leader).
    async fn servers(&self) -> Result<Vec<(String, Pid, bool)>, String> {
        let dir = self
            .state_dir
            .clone()
            .ok_or("an external cluster's processes cannot be signalled")?;
        let status = lockbench_cluster::Cluster::new(dir)
            .status()
            .await
            .map_err(|e| format!("cannot read the managed cluster: {e:#}"))?;
        let group = lockbench_registry::group_of(self.backend);
        Ok(status
            .servers
            .into_iter()
            .filter(|s| s.group == group)
            .filter_map(|s| {
                let leader = s.role.as_deref() == Some("leader");
                Some((s.name, Pid::from_raw(s.pid? as i32), leader))
            })
            .collect())
    }

    /// The servers `targets` names, chosen by the chaos crate's resolver (the one managed
    /// chaos and compose use).
    fn pick(
        &mut self,
        servers: Vec<(String, Pid, bool)>,
        targets: &Targets,
    ) -> Result<Vec<(String, Pid, bool)>, String> {
        let names: Vec<String> = servers.iter().map(|s| s.0.clone()).collect();
        let leader = servers.iter().find(|s| s.2).map(|s| s.0.as_str());
        let chosen = lockbench_chaos::choose(targets, &names, &[], leader, &mut self.rng)?;
        Ok(servers
            .into_iter()
            .filter(|s| chosen.contains(&s.0))
            .collect())
    }
}

impl Nemesis for StandInServerNemesis {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            Fault::Pause { targets } => {
                let chosen = match self.servers().await.and_then(|s| self.pick(s, targets)) {
                    Ok(c) if !c.is_empty() => c,
                    picked => {
                        let why = picked
                            .err()
                            .unwrap_or_else(|| format!("no server matches {targets:?}"));
                        let event =
                            FaultEvent::now(clock, "pause", FaultPhase::Start, vec![], why, false);
                        return vec![event];
                    }
                };
                let names: Vec<String> = chosen.iter().map(|s| s.0.clone()).collect();
                let pids: Vec<Pid> = chosen.iter().map(|s| s.1).collect();
                let ok = signal_all(&pids, Signal::SIGSTOP);
                self.paused.push((names.clone(), pids.clone()));
                vec![FaultEvent::now(
                    clock,
                    "pause",
                    FaultPhase::Start,
                    names,
                    format!("SIGSTOP of server pid(s) {pids:?}"),
                    ok,
                )]
            }
            Fault::Resume { .. } => self.heal_all(clock).await,
            Fault::Heal => Vec::new(),
            other => vec![FaultEvent::now(
                clock,
                other.verb(),
                FaultPhase::Start,
                vec![],
                "needs the chaos crate's server nemesis (namespaces, iptables, restarts); not available in this build",
                false,
            )],
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        self.paused
            .drain(..)
            .map(|(names, pids)| {
                let ok = signal_all(&pids, Signal::SIGCONT);
                FaultEvent::now(
                    clock,
                    "pause",
                    FaultPhase::Stop,
                    names,
                    "SIGCONT of the server process(es)",
                    ok,
                )
            })
            .collect()
    }
}

/// Routes faults on client *processes* (pause, resume, kill of workers) to `client`, everything
/// on servers or on the network to `server`: partitions and link faults on client hosts are
/// firewall rules in the namespaces, which the server nemesis owns (it sees every client host
/// that exists when the fault starts). `isolate = "holder"` is resolved to the holder's worker
/// name here, then applied by the server nemesis.
pub struct Composite<S> {
    /// Owns faults on client processes.
    pub client: ClientNemesis,
    /// Owns faults on servers and on the network.
    pub server: S,
    /// Owns link faults when the run's clients go through link proxies (then `link-delay` and
    /// `link-blackhole` are toxics on the proxies, and `heal` clears them too).
    pub links: Option<lockbench_chaos::LinkNemesis>,
}

/// Sends `signal` to every process in `pids`; `true` when every one was delivered.
fn signal_all(pids: &[Pid], signal: Signal) -> bool {
    pids.iter()
        .all(|p| nix::sys::signal::kill(*p, signal).is_ok())
}

fn fault_targets(fault: &Fault) -> Option<&Targets> {
    match fault {
        Fault::Pause { targets }
        | Fault::Resume { targets }
        | Fault::Kill { targets }
        | Fault::Start { targets }
        | Fault::ClockJump { targets, .. }
        | Fault::LinkDelay { targets, .. }
        | Fault::LinkBlackhole { targets } => Some(targets),
        Fault::Partition { split } => match split {
            lockbench_core::PartitionSpec::Isolate(t) => Some(t),
            _ => None,
        },
        Fault::Heal | Fault::RedisFailover => None,
    }
}

impl<S: Nemesis> Nemesis for Composite<S> {
    async fn apply(&mut self, fault: &Fault, clock: &RunClock) -> Vec<FaultEvent> {
        match fault {
            Fault::Heal => {
                let mut out = self.client.apply(fault, clock).await;
                out.extend(self.server.apply(fault, clock).await);
                if let Some(links) = self.links.as_mut() {
                    out.extend(links.apply(fault, clock).await);
                }
                out
            }
            Fault::LinkBlackhole { .. } | Fault::LinkDelay { .. } if self.links.is_some() => {
                let links = self.links.as_mut().expect("checked");
                links.apply(fault, clock).await
            }
            // The final "resume all" of a schedule goes to both.
            Fault::Resume {
                targets: Targets::All,
            } => {
                let mut out = self.client.heal_all(clock).await;
                out.extend(self.server.apply(fault, clock).await);
                out
            }
            Fault::Partition {
                split: lockbench_core::PartitionSpec::Isolate(Targets::Holder),
            } => match self.client.resolve(&Targets::Holder) {
                Ok(ws) => {
                    let names = ws.iter().map(|w| w.name.clone()).collect();
                    let split = lockbench_core::PartitionSpec::Isolate(Targets::Nodes(names));
                    self.server.apply(&Fault::Partition { split }, clock).await
                }
                Err(why) => vec![FaultEvent::now(
                    clock,
                    "partition",
                    FaultPhase::Start,
                    vec![],
                    why,
                    false,
                )],
            },
            Fault::Partition { .. } | Fault::LinkBlackhole { .. } | Fault::LinkDelay { .. } => {
                self.server.apply(fault, clock).await
            }
            _ if fault_targets(fault).is_some_and(is_client_target) => {
                self.client.apply(fault, clock).await
            }
            _ => self.server.apply(fault, clock).await,
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
