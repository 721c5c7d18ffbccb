//! [`ClientNemesis`]: faults on client worker processes, the clients a fault can really stop
//! (each runs in its own OS process, so a SIGSTOP stops its heartbeats too).
//!
//! It owns `holder` (the worker whose client holds a lock now, as `holding` tells) and named
//! client hosts (`client3`). `pause` / `resume` are SIGSTOP / SIGCONT of the worker process,
//! `kill` is SIGKILL followed by a fresh worker process for the same slot (the runner's
//! respawner, handed in as a [`Respawn`]; the kill window closes when it is connected).
//! Partitions and packet faults of client *hosts* are firewall rules, which the server nemesis
//! applies (it sees every host); [`Composite`](crate::Composite) routes them there.
//!
//! The workers themselves are the runner's (`lockbench-workloads` spawns them); this nemesis
//! sees each only as a [`ClientProcess`]: a name, its slots and a pid.

use crate::Nemesis;
use lockbench_core::{Fault, FaultEvent, FaultKind, FaultPhase, RunClock, Targets};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A client worker process as faults see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientProcess {
    /// Its name (`client1`, ... for slots 0, ...), the name faults target.
    pub name: String,
    /// The client slots it runs.
    pub slots: Vec<u32>,
    /// Its pid in this process's pid namespace.
    pub pid: Pid,
    /// The container it runs in (compose mode's client containers), for notes.
    pub container: Option<String>,
    /// Signals go through `docker kill --signal` to [`Self::container`] (see
    /// `lockbench_core::signal`).
    pub via_docker: bool,
}

impl ClientProcess {
    /// `pid 123`, or `pid 123 (container lockbench-client1)`, for notes.
    pub fn process(&self) -> String {
        match &self.container {
            Some(c) if self.via_docker => {
                format!(
                    "pid {} (container {c}, signalled through docker kill)",
                    self.pid
                )
            }
            Some(c) => format!("pid {} (container {c})", self.pid),
            None => format!("pid {}", self.pid),
        }
    }

    fn signal(&self, sig: Signal) -> nix::Result<()> {
        let via = self.container.as_deref().filter(|_| self.via_docker);
        lockbench_core::signal::send(self.pid, via, sig)
    }
}

/// Starts a fresh worker process for a slot whose worker was killed, and returns it once its
/// clients are connected and running on the run's clock.
pub type Respawn = Box<
    dyn Fn(u32) -> Pin<Box<dyn Future<Output = Result<ClientProcess, String>> + Send>>
        + Send
        + Sync,
>;

/// Faults on client worker processes.
pub struct ClientNemesis {
    workers: Vec<ClientProcess>,
    holding: Arc<[AtomicBool]>,
    /// Stopped workers: (names as recorded, the processes).
    paused: Vec<(Vec<String>, Vec<ClientProcess>)>,
    /// Restarts killed workers (`None`: they stay dead).
    respawn: Option<Respawn>,
}

impl ClientNemesis {
    /// A nemesis over `workers`; `holding` says per client slot whether it holds a lock now.
    pub fn new(workers: Vec<ClientProcess>, holding: Arc<[AtomicBool]>) -> ClientNemesis {
        ClientNemesis {
            workers,
            holding,
            paused: Vec::new(),
            respawn: None,
        }
    }

    /// Restarts killed workers with `respawn`.
    pub fn with_respawn(mut self, respawn: Respawn) -> ClientNemesis {
        self.respawn = Some(respawn);
        self
    }

    /// SIGKILL of the `names` workers, then a fresh worker for each (when a respawner is set).
    async fn kill(&mut self, names: Vec<String>, clock: &RunClock) -> Vec<FaultEvent> {
        let victims: Vec<ClientProcess> = self
            .workers
            .iter()
            .filter(|w| names.contains(&w.name))
            .cloned()
            .collect();
        let ok = victims.iter().all(|w| w.signal(Signal::SIGKILL).is_ok());
        let procs: Vec<String> = victims.iter().map(|w| w.process()).collect();
        let mut out = vec![FaultEvent::now(
            clock,
            FaultKind::Kill,
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
        let Some(respawn) = &self.respawn else {
            return out;
        };
        for victim in victims {
            let Some(&slot) = victim.slots.first() else {
                continue;
            };
            let (note, ok) = match respawn(slot).await {
                Ok(fresh) => {
                    let note = format!(
                        "{} restarted as a fresh worker process, {} (was {})",
                        fresh.name,
                        fresh.process(),
                        victim.process()
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
                FaultKind::Kill,
                FaultPhase::Stop,
                vec![victim.name.clone()],
                note,
                ok,
            ));
        }
        out
    }

    /// The workers `targets` names now (`holder`: the first worker holding a lock).
    pub(crate) fn resolve(&self, targets: &Targets) -> Result<Vec<&ClientProcess>, String> {
        if self.workers.is_empty() {
            return Err(
                "no client runs as a worker process (set workload.processes = \"workers\")".into(),
            );
        }
        let found: Vec<&ClientProcess> = match targets {
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
            Targets::One
            | Targets::Leader
            | Targets::Followers
            | Targets::Minority
            | Targets::Majority
            | Targets::All => self.workers.iter().collect(),
        };
        if found.is_empty() {
            Err(format!("no client process matches {targets:?} right now"))
        } else {
            Ok(found)
        }
    }

    fn pause(&mut self, targets: &Targets, clock: &RunClock) -> FaultEvent {
        let ws = match self.resolve(targets) {
            Ok(ws) => ws,
            Err(why) => return not_mine(clock, FaultKind::Pause, why),
        };
        let names: Vec<String> = ws.iter().map(|w| w.name.clone()).collect();
        let stopped: Vec<ClientProcess> = ws.iter().map(|w| (*w).clone()).collect();
        let ok = ws.iter().all(|w| w.signal(Signal::SIGSTOP).is_ok());
        let procs: Vec<String> = ws.iter().map(|w| w.process()).collect();
        let note = format!("SIGSTOP of worker {}", procs.join(", "));
        self.paused.push((names.clone(), stopped));
        FaultEvent::now(clock, FaultKind::Pause, FaultPhase::Start, names, note, ok)
    }

    fn resume(&mut self, clock: &RunClock, only: Option<&[String]>) -> Vec<FaultEvent> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for (names, pids) in self.paused.drain(..) {
            if only.is_some_and(|o| !names.iter().any(|n| o.contains(n))) {
                keep.push((names, pids));
                continue;
            }
            let ok = pids.iter().all(|p| p.signal(Signal::SIGCONT).is_ok());
            out.push(FaultEvent::now(
                clock,
                FaultKind::Pause,
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
            Fault::Pause { targets } => vec![self.pause(targets, clock)],
            Fault::Resume { targets } => self.resume(clock, targets.named()),
            Fault::Kill { targets } => match self.resolve(targets) {
                Ok(ws) => {
                    let names: Vec<String> = ws.iter().map(|w| w.name.clone()).collect();
                    self.kill(names, clock).await
                }
                Err(why) => vec![not_mine(clock, FaultKind::Kill, why)],
            },
            // A killed worker was restarted right after the kill: nothing left to start.
            Fault::Start { .. } => Vec::new(),
            // Nothing of a heal is a worker's: its firewall rules are the server nemesis's.
            Fault::Heal => Vec::new(),
            Fault::Partition { .. }
            | Fault::LinkDelay { .. }
            | Fault::LinkBlackhole { .. }
            | Fault::PacketLoss { .. }
            | Fault::ClockJump { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::RedisFailover
            | Fault::Promote => vec![not_mine(
                clock,
                fault.kind(),
                "network and server faults are applied by the server nemesis or the link \
                 proxies, not to worker processes"
                    .into(),
            )],
        }
    }

    async fn heal_all(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        self.resume(clock, None)
    }
}

fn not_mine(clock: &RunClock, kind: FaultKind, why: String) -> FaultEvent {
    FaultEvent::not_applied(clock, kind, vec![], why)
}
