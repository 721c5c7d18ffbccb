//! Faults: verbs on named targets (turmoil's vocabulary), as data.
//!
//! A [`Fault`] says *what* to do (`partition`, `heal`, `pause`, `resume`, `kill`, `start`,
//! `clock-jump`, `link-delay`, ...) and to *whom* ([`Targets`], resolved at run time against
//! the backend's servers and clients: "the ZooKeeper leader", "one Redlock server"). The chaos
//! crate turns a fault into real actions (iptables in a network namespace, SIGSTOP, SIGKILL);
//! every start and stop of a fault is recorded as a [`FaultEvent`] in the same history as the
//! clients' ops, on the same clock, so checkers and plots know the fault windows exactly.

use crate::fault_kind::FaultKind;
use crate::time::{Nanos, RunClock};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which processes or hosts a fault applies to. Resolved when the fault starts, against the
/// servers of the system the backend uses (ZooKeeper, etcd, the Redis server, the Redlock
/// servers) or its client processes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// One server, chosen with the scenario's seeded RNG.
    One,
    /// The current leader / primary (ZooKeeper `Mode: leader`, etcd leader member).
    Leader,
    /// Every server but the leader.
    Followers,
    /// A minority of the servers (⌊(n-1)/2⌋), seeded choice.
    Minority,
    /// A majority of the servers, seeded choice.
    Majority,
    /// Every server.
    All,
    /// The client process currently holding the lock (client faults only).
    Holder,
    /// Named servers or client hosts (`zk1`, `redlock3`, `client2`).
    Nodes(Vec<String>),
}

/// How a partition splits the hosts (Jepsen's grudges).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionSpec {
    /// Cut the targets off from every other host.
    Isolate(Targets),
    /// Two halves: a minority and a majority of the servers (clients stay with the majority).
    Halves,
    /// Each server sees a majority, but no two see the same one (Jepsen majorities-ring).
    MajoritiesRing,
    /// Two halves joined by one server that sees both (Jepsen bridge).
    Bridge,
    /// Cut the client hosts off from every server.
    ClientsOff,
    /// Redlock's minority-overlap split: clients of side A see servers {1,2,3}, clients of
    /// side B see {3,4,5}.
    RedlockOverlap,
    /// A grudge of chosen client hosts against chosen servers, in one direction or both; every
    /// other link stays (`split = { cut = { clients = "holder", servers = "majority" } }`).
    Cut(Cut),
}

/// The client hosts that lose some servers, which servers, and which way the packets are lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cut {
    /// The client hosts cut: `holder` (the host of the worker holding a lock when the fault
    /// starts) or named hosts (`{ nodes = ["client1"] }`).
    pub clients: Targets,
    /// The servers they lose, resolved as any server target (`majority`, `leader`, named).
    pub servers: Targets,
    /// Which packets are lost; both ways unless said.
    #[serde(default)]
    pub direction: CutDirection,
}

/// Which way a [`Cut`] loses packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutDirection {
    /// Nothing passes either way.
    #[default]
    Both,
    /// The clients' packets never reach the servers (the servers drop them): requests are
    /// lost, never executed.
    Requests,
    /// The servers' packets never reach the clients (the clients drop them): requests arrive
    /// and are executed, their replies are lost.
    Replies,
}

/// A fault verb with its targets.
///
/// Its fields share one TOML table with the schedule's (`at`, `every`, `every_jitter`,
/// `duration`: see `scenario::FaultSpec`), so no verb may have a field of those names, and an
/// unknown field is an error (`deny_unknown_fields`) rather than silently ignored: a misspelt
/// `durration` or a field another verb has must not turn into a fault that is not the one
/// written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// Drop traffic between groups of hosts (iptables inside the hosts' namespaces).
    Partition {
        /// The shape of the split.
        split: PartitionSpec,
    },
    /// Remove every partition and link fault.
    Heal,
    /// SIGSTOP the targets.
    Pause {
        /// Whom.
        targets: Targets,
    },
    /// SIGCONT the targets.
    Resume {
        /// Whom.
        targets: Targets,
    },
    /// SIGKILL the targets.
    Kill {
        /// Whom.
        targets: Targets,
    },
    /// Restart killed targets (with their data dir; Redis without persistence restarts empty).
    Start {
        /// Whom.
        targets: Targets,
    },
    /// Forward clock jump on the targets, as their system makes it
    /// ([`System::clock_jump`](crate::System::clock_jump)): on a Redis server, emulated, every
    /// lock key's remaining TTL shortened by `by` (what a jump of the server's clock does to
    /// its keys), named as an emulation in results.
    ClockJump {
        /// Which Redis server(s).
        targets: Targets,
        /// How far forward.
        #[serde(with = "humantime_serde")]
        by: Duration,
    },
    /// Move the wall clock of the targets' processes, for real: every clock read they make
    /// through the C library (`clock_gettime(CLOCK_REALTIME)`, `gettimeofday`, `time`) is off
    /// by `shift` and, with `drift`, gains or loses that share of every second from then on,
    /// until `heal` puts it right; through lockbench's clock shim, which the managed cluster
    /// preloads into every server. Seen, not only requested: the shim counts the moved reads,
    /// and a server that made none (a Go runtime reads the kernel's clock itself; a container
    /// runs without the shim) records the fault as not applied.
    Clock {
        /// Which servers.
        targets: Targets,
        /// A jump, forward (`"+30s"`) or back (`"-2s"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shift: Option<crate::clock_shift::ClockShift>,
        /// A rate the clock runs fast (`"+10%"`) or slow (`"-500ppm"`) at from then on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        drift: Option<crate::clock_shift::ClockDrift>,
    },
    /// Slow or stall the targets' disks: every write and sync a server makes under its data
    /// directory (`write`, `fsync`, `fdatasync`, `fallocate`, creating, renaming and removing
    /// files) answered `delay` late, or held until `heal` (`freeze = true`): the slow or
    /// stalled fsync behind etcd's and ZooKeeper's best-known outages. Through a FUSE
    /// pass-through that a run with a disk fault mounts over each of its servers' data
    /// directories (the servers restart onto it before the run and off it after). Seen, not
    /// only requested: the pass-through counts the operations it held, and a server that made
    /// none within 2 s (Redis without persistence writes nothing) has its stall taken back and
    /// is named so.
    Disk {
        /// Which servers.
        targets: Targets,
        /// How late each write and sync is answered.
        #[serde(
            default,
            with = "humantime_serde::option",
            skip_serializing_if = "Option::is_none"
        )]
        delay: Option<Duration>,
        /// Hold every write and sync until `heal`: a disk that stopped answering.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        freeze: bool,
    },
    /// Add latency (and jitter) on the links between clients and the targets, through an
    /// in-process TCP proxy.
    LinkDelay {
        /// Which servers.
        targets: Targets,
        /// Added one-way latency.
        #[serde(with = "humantime_serde")]
        latency: Duration,
        /// Uniform jitter on top: each reply is delayed `latency ± jitter` (Toxiproxy's
        /// `latency` toxic). Not to be confused with the schedule's `every_jitter`.
        #[serde(with = "humantime_serde", default)]
        jitter: Duration,
    },
    /// Black-hole the links between clients and the targets (connections stay open, nothing
    /// arrives).
    LinkBlackhole {
        /// Which servers.
        targets: Targets,
    },
    /// Drop a share of the packets on the links between clients and the targets, both ways
    /// (iptables' `statistic` match inside the servers' namespaces; no `tc netem` here).
    PacketLoss {
        /// Which servers (every client's links to them), or client hosts (their links to every
        /// server), as `link-delay` names them.
        targets: Targets,
        /// The share of packets dropped, above 0 and at most 1 (`0.1`: one in ten).
        rate: f64,
        /// How the packets are picked: `random` (the default; the kernel's random numbers,
        /// which the scenario's seed does not reach) or `nth` (exactly every 1/rate-th packet,
        /// the same ones in every run).
        #[serde(default)]
        mode: LossMode,
    },
    /// Redis Sentinel failover that loses a grant (the `redis-sentinel` system only): the
    /// replica's replication link is cut, the primary's next lock grant is awaited, and the
    /// primary is SIGKILLed right after it, before the key can reach the replica; Sentinel then
    /// promotes the replica, which never saw the grant. The inverse (`heal`) restarts the old
    /// primary, which Sentinel turns into a replica of the new one. Offered by Redis
    /// ([`System::faults`](crate::System::faults)), which applies it through the chaos
    /// controller's [`FaultAccess`](crate::FaultAccess).
    RedisFailover,
    /// Failover by promotion, for a system that can promote a replica (PostgreSQL): the
    /// current leader is SIGKILLed (a crash), a replica is promoted through the system's own
    /// request (`System::promote`) and the fault waits until it reports that it leads.
    /// Clients that reconnect find the new leader by their own connection logic. The inverse
    /// (`heal`) restarts the old leader, which rejoins as a replica of the new one (the
    /// system's launch does that), so the next run starts with a whole group.
    Promote,
}

/// How `packet-loss` picks the packets it drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossMode {
    /// Each packet on its own, with probability `rate` (`statistic --mode random`). The kernel
    /// draws from its own random numbers, which no seed reaches: two runs drop different
    /// packets, and the measured share varies around the rate.
    #[default]
    Random,
    /// Exactly every n-th packet of each link and direction, n = 1/rate (`statistic --mode
    /// nth`): deterministic; the rate must be 1/n (0.5, 0.25, 0.1, ...).
    Nth,
}

/// Which nemesis makes a fault real: the one routing every nemesis composition follows
/// (`lockbench_chaos::Composite`), decided here, per kind, with the kind's other facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Every nemesis: each undoes what it did (`heal`, and a schedule's final `resume` /
    /// `start` of everything).
    Everyone,
    /// Signals to client worker processes (`holder`, `client2`): the client nemesis.
    Clients,
    /// The servers' processes or state (signals, restarts, the clock emulation, a failover):
    /// the server nemesis.
    Servers,
    /// Firewall rules inside the hosts' namespaces: the server nemesis, which sees every host;
    /// `holder` is first resolved to its worker's host.
    Firewall,
    /// Toxics on the run's link proxies when it has them, else the server nemesis.
    Proxies,
}

impl Targets {
    /// The host names when these name them (`Nodes`), `None` for a choice made at run time.
    pub fn named(&self) -> Option<&[String]> {
        match self {
            Targets::Nodes(names) => Some(names),
            Targets::One
            | Targets::Leader
            | Targets::Followers
            | Targets::Minority
            | Targets::Majority
            | Targets::All
            | Targets::Holder => None,
        }
    }

    /// `true` when these name client processes only (`holder`, `client3`), not servers.
    pub fn are_clients(&self) -> bool {
        match self {
            Targets::Holder => true,
            Targets::Nodes(names) => {
                !names.is_empty() && names.iter().all(|n| n.starts_with("client"))
            }
            Targets::One
            | Targets::Leader
            | Targets::Followers
            | Targets::Minority
            | Targets::Majority
            | Targets::All => false,
        }
    }
}

// Every fact about a fault kind is an exhaustive `match` below: a new verb does not compile
// until it has its name, its targets, its inverse and its route (CONTRIBUTING, "Adding a
// fault").
impl Fault {
    /// The verb, as scenarios and results name it ([`FaultKind::name`]).
    pub fn verb(&self) -> &'static str {
        self.kind().name()
    }

    /// The kind its events are recorded as.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Heal => FaultKind::Heal,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Resume { .. } => FaultKind::Resume,
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Start { .. } => FaultKind::Start,
            Fault::ClockJump { .. } => FaultKind::ClockJump,
            Fault::Clock { .. } => FaultKind::Clock,
            Fault::Disk { .. } => FaultKind::Disk,
            Fault::LinkDelay { .. } => FaultKind::LinkDelay,
            Fault::LinkBlackhole { .. } => FaultKind::LinkBlackhole,
            Fault::PacketLoss { .. } => FaultKind::PacketLoss,
            Fault::RedisFailover => FaultKind::RedisFailover,
            Fault::Promote => FaultKind::Promote,
        }
    }

    /// The targets, when the verb has any (a partition only when it isolates them, or the
    /// client hosts of a cut).
    pub fn targets(&self) -> Option<&Targets> {
        match self {
            Fault::Pause { targets }
            | Fault::Resume { targets }
            | Fault::Kill { targets }
            | Fault::Start { targets }
            | Fault::ClockJump { targets, .. }
            | Fault::Clock { targets, .. }
            | Fault::Disk { targets, .. }
            | Fault::LinkDelay { targets, .. }
            | Fault::LinkBlackhole { targets }
            | Fault::PacketLoss { targets, .. } => Some(targets),
            Fault::Partition { split } => match split {
                PartitionSpec::Isolate(t) => Some(t),
                PartitionSpec::Cut(cut) => Some(&cut.clients),
                PartitionSpec::Halves
                | PartitionSpec::MajoritiesRing
                | PartitionSpec::Bridge
                | PartitionSpec::ClientsOff
                | PartitionSpec::RedlockOverlap => None,
            },
            Fault::Heal | Fault::RedisFailover | Fault::Promote => None,
        }
    }

    /// The same fault on other targets (`holder` resolved to a worker's host); `None` when
    /// the verb has no targets.
    pub fn with_targets(&self, targets: Targets) -> Option<Fault> {
        let mut f = self.clone();
        let slot = match &mut f {
            Fault::Pause { targets }
            | Fault::Resume { targets }
            | Fault::Kill { targets }
            | Fault::Start { targets }
            | Fault::ClockJump { targets, .. }
            | Fault::Clock { targets, .. }
            | Fault::Disk { targets, .. }
            | Fault::LinkDelay { targets, .. }
            | Fault::LinkBlackhole { targets }
            | Fault::PacketLoss { targets, .. } => targets,
            Fault::Partition { split } => match split {
                PartitionSpec::Isolate(t) => t,
                PartitionSpec::Cut(cut) => &mut cut.clients,
                PartitionSpec::Halves
                | PartitionSpec::MajoritiesRing
                | PartitionSpec::Bridge
                | PartitionSpec::ClientsOff
                | PartitionSpec::RedlockOverlap => return None,
            },
            Fault::Heal | Fault::RedisFailover | Fault::Promote => return None,
        };
        *slot = targets;
        Some(f)
    }

    /// What ends a window of this fault when its schedule entry has a `duration`
    /// (`partition` / `clock` / `link-*` / `redis-failover` -> `heal`, `pause` -> `resume`, `kill` ->
    /// `start`); `None` for verbs that open no window (`heal`, `resume`, `start`, the
    /// instantaneous `clock-jump`).
    pub fn inverse(&self) -> Option<Fault> {
        match self {
            Fault::Partition { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::LinkDelay { .. }
            | Fault::LinkBlackhole { .. }
            | Fault::PacketLoss { .. }
            | Fault::RedisFailover
            | Fault::Promote => Some(Fault::Heal),
            Fault::Pause { targets } => Some(Fault::Resume {
                targets: targets.clone(),
            }),
            Fault::Kill { targets } => Some(Fault::Start {
                targets: targets.clone(),
            }),
            Fault::Heal | Fault::Resume { .. } | Fault::Start { .. } | Fault::ClockJump { .. } => {
                None
            }
        }
    }

    /// Which nemesis applies it (see [`Route`]).
    pub fn route(&self) -> Route {
        match self {
            Fault::Heal => Route::Everyone,
            // A schedule's final undo: whatever any nemesis stopped or killed.
            Fault::Resume {
                targets: Targets::All,
            }
            | Fault::Start {
                targets: Targets::All,
            } => Route::Everyone,
            Fault::Pause { targets }
            | Fault::Resume { targets }
            | Fault::Kill { targets }
            | Fault::Start { targets } => {
                if targets.are_clients() {
                    Route::Clients
                } else {
                    Route::Servers
                }
            }
            Fault::ClockJump { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::RedisFailover
            | Fault::Promote => Route::Servers,
            Fault::Partition { .. } | Fault::PacketLoss { .. } => Route::Firewall,
            Fault::LinkDelay { .. } | Fault::LinkBlackhole { .. } => Route::Proxies,
        }
    }

    /// Checks values that parse but cannot work (the scenario names the entry).
    pub fn check(&self) -> Result<(), String> {
        match self {
            Fault::PacketLoss { rate, mode, .. } => {
                if !(*rate > 0.0 && *rate <= 1.0) {
                    return Err(format!(
                        "packet-loss rate {rate}: the share of packets dropped, above 0 and at most 1"
                    ));
                }
                let n = (1.0 / rate).round();
                if *mode == LossMode::Nth && (n * rate - 1.0).abs() > 1e-9 {
                    return Err(format!(
                        "packet-loss rate {rate} in nth mode: drops every n-th packet, so the \
                         rate must be 1/n (0.5, 0.25, 0.2, 0.1, ...); {:.4} or {:.4} are near",
                        1.0 / n.max(1.0),
                        1.0 / (n + 1.0)
                    ));
                }
                Ok(())
            }
            Fault::Clock {
                shift: None,
                drift: None,
                ..
            } => Err(
                "clock: says neither how far its clock jumps (shift = \"+30s\") nor \
                      how fast it drifts (drift = \"+10%\"); give one or both"
                    .into(),
            ),
            Fault::Disk {
                delay: None,
                freeze: false,
                ..
            } => Err(
                "disk: says neither how late its writes and syncs are answered \
                      (delay = \"200ms\") nor that they stall until heal (freeze = true); \
                      give one"
                    .into(),
            ),
            Fault::Disk {
                delay: Some(_),
                freeze: true,
                ..
            } => Err(
                "disk: both delays (delay) and freezes (freeze = true) its writes; \
                      a frozen disk answers nothing, so give one"
                    .into(),
            ),
            Fault::Disk { delay: Some(d), .. } if d.is_zero() => {
                Err("disk: delay = \"0s\" slows nothing; give how late each \
                      write and sync is answered, as \"200ms\""
                    .into())
            }
            Fault::Partition { .. }
            | Fault::Heal
            | Fault::Pause { .. }
            | Fault::Resume { .. }
            | Fault::Kill { .. }
            | Fault::Start { .. }
            | Fault::ClockJump { .. }
            | Fault::Clock { .. }
            | Fault::Disk { .. }
            | Fault::LinkDelay { .. }
            | Fault::LinkBlackhole { .. }
            | Fault::RedisFailover
            | Fault::Promote => Ok(()),
        }
    }
}

/// Whether a fault event opens or closes a fault window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultPhase {
    /// The fault was applied.
    Start,
    /// The fault was undone (heal, resume, start).
    Stop,
}

/// One fault applied or undone, as recorded in the history (Jepsen's nemesis ops).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultEvent {
    /// When it took effect, on the run's clock.
    #[serde(rename = "t")]
    pub time: Nanos,
    /// What was applied or undone (`partition`, `pause`, ...).
    pub fault: FaultKind,
    /// Start or stop of the fault window.
    pub phase: FaultPhase,
    /// The resolved targets (server or client host names).
    pub targets: Vec<String>,
    /// What was done, for humans (e.g. "iptables DROP 10.77.0.12 on zk1,zk3"); for emulated
    /// faults this says so.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// `false` when the fault could not be applied here (e.g. partitions without root); the
    /// note says why. Such windows are reported as unavailable, never silently skipped.
    pub applied: bool,
}

impl FaultEvent {
    /// The event of `fault` on `targets`, stamped with `clock`'s time now: what every nemesis
    /// records when it applies or undoes a fault.
    pub fn now(
        clock: &RunClock,
        fault: FaultKind,
        phase: FaultPhase,
        targets: Vec<String>,
        note: impl Into<String>,
        applied: bool,
    ) -> FaultEvent {
        FaultEvent {
            time: clock.now(),
            fault,
            phase,
            targets,
            note: note.into(),
            applied,
        }
    }

    /// The same event stamped at `time` instead: an undo's event is stamped when the undo
    /// began, since the fault may stop acting at any moment of it.
    pub fn at(self, time: Nanos) -> FaultEvent {
        FaultEvent { time, ..self }
    }

    /// The start of a window of `fault` that was NOT applied (`applied = false`), with `why`:
    /// what every nemesis records for a fault that is not its own or that it could not make
    /// real, so the window is reported as unavailable instead of skipped.
    pub fn not_applied(
        clock: &RunClock,
        fault: FaultKind,
        targets: Vec<String>,
        why: String,
    ) -> FaultEvent {
        FaultEvent::now(clock, fault, FaultPhase::Start, targets, why, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's route: client processes, servers, the firewall, the proxies, or everyone
    /// for the undo steps.
    #[test]
    fn every_kind_routes_to_its_owner() {
        let pause = |t| Fault::Pause { targets: t };
        assert_eq!(pause(Targets::Holder).route(), Route::Clients);
        assert_eq!(
            pause(Targets::Nodes(vec!["client2".into()])).route(),
            Route::Clients
        );
        assert_eq!(pause(Targets::Leader).route(), Route::Servers);
        assert_eq!(
            pause(Targets::Nodes(vec!["client2".into(), "zk1".into()])).route(),
            Route::Servers
        );
        let resume_all = Fault::Resume {
            targets: Targets::All,
        };
        assert_eq!(resume_all.route(), Route::Everyone);
        assert_eq!(Fault::Heal.route(), Route::Everyone);
        let isolate = Fault::Partition {
            split: PartitionSpec::Isolate(Targets::Holder),
        };
        assert_eq!(isolate.route(), Route::Firewall);
        let blackhole = Fault::LinkBlackhole {
            targets: Targets::One,
        };
        assert_eq!(blackhole.route(), Route::Proxies);
        assert_eq!(blackhole.inverse(), Some(Fault::Heal));
        assert_eq!(
            isolate.with_targets(Targets::Nodes(vec!["client1".into()])),
            Some(Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Nodes(vec!["client1".into()]))
            })
        );
        let halves = Fault::Partition {
            split: PartitionSpec::Halves,
        };
        assert_eq!(halves.with_targets(Targets::One), None);
        assert_eq!(resume_all.inverse(), None);
    }

    /// A loss rate outside (0, 1], or one nth mode cannot drop (not 1/n), is an error.
    #[test]
    fn packet_loss_rates_are_checked() {
        let loss = |rate, mode| Fault::PacketLoss {
            targets: Targets::One,
            rate,
            mode,
        };
        assert!(loss(0.25, LossMode::Nth).check().is_ok());
        assert!(loss(0.3, LossMode::Random).check().is_ok());
        assert!(
            loss(0.3, LossMode::Nth)
                .check()
                .unwrap_err()
                .contains("1/n")
        );
        assert!(loss(0.0, LossMode::Random).check().is_err());
        assert!(loss(1.5, LossMode::Random).check().is_err());
        assert_eq!(loss(0.1, LossMode::Nth).route(), Route::Firewall);
        assert_eq!(loss(0.1, LossMode::Nth).inverse(), Some(Fault::Heal));
    }

    #[test]
    fn faults_read_as_toml_tables() {
        #[derive(Deserialize)]
        struct W {
            f: Vec<Fault>,
        }
        let w: W = toml::from_str(
            r#"
            [[f]]
            fault = "partition"
            split = { isolate = "leader" }
            [[f]]
            fault = "pause"
            targets = { nodes = ["zk1", "zk2"] }
            [[f]]
            fault = "clock-jump"
            targets = "one"
            by = "3s"
            [[f]]
            fault = "heal"
            [[f]]
            fault = "redis-failover"
            [[f]]
            fault = "promote"
            "#,
        )
        .unwrap();
        assert_eq!(
            w.f[0],
            Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Leader)
            }
        );
        assert_eq!(w.f[1].verb(), "pause");
        assert_eq!(
            w.f[2],
            Fault::ClockJump {
                targets: Targets::One,
                by: Duration::from_secs(3)
            }
        );
        assert_eq!(w.f[3], Fault::Heal);
        assert_eq!(w.f[4], Fault::RedisFailover);
        assert_eq!(w.f[4].verb(), "redis-failover");
        assert_eq!(w.f[5], Fault::Promote);
        assert_eq!(w.f[5].verb(), "promote");
    }

    /// A clock fault says how its clock moves: a jump, a drift or both, never neither.
    #[test]
    fn a_clock_fault_moves_its_clock_one_way_or_both() {
        #[derive(Debug, Deserialize)]
        struct W {
            f: Fault,
        }
        let read = |fields: &str| {
            toml::from_str::<W>(&format!(
                "[f]\nfault = \"clock\"\ntargets = \"all\"\n{fields}"
            ))
            .map(|w| w.f)
        };
        let both = read("shift = \"-2s\"\ndrift = \"+10%\"\n").unwrap();
        assert_eq!(both.check(), Ok(()));
        assert_eq!(both.inverse(), Some(Fault::Heal));
        let neither = read("").unwrap().check().unwrap_err();
        assert!(
            neither.contains("shift = \"+30s\"") && neither.contains("drift"),
            "{neither}"
        );
        let bad = read("drift = \"fast\"\n").unwrap_err().to_string();
        assert!(bad.contains("\"+10%\""), "{bad}");
    }

    /// A disk fault delays or freezes, exactly one of the two, and is healed by `heal`.
    #[test]
    fn a_disk_fault_delays_or_freezes() {
        #[derive(Debug, Deserialize)]
        struct W {
            f: Fault,
        }
        let read = |fields: &str| {
            toml::from_str::<W>(&format!(
                "[f]\nfault = \"disk\"\ntargets = \"leader\"\n{fields}"
            ))
            .map(|w| w.f)
        };
        let slow = read("delay = \"200ms\"\n").unwrap();
        assert_eq!(
            slow,
            Fault::Disk {
                targets: Targets::Leader,
                delay: Some(Duration::from_millis(200)),
                freeze: false
            }
        );
        assert_eq!(slow.check(), Ok(()));
        assert_eq!(slow.inverse(), Some(Fault::Heal));
        assert_eq!(slow.route(), Route::Servers);
        assert_eq!(slow.kind(), FaultKind::Disk);
        assert_eq!(read("freeze = true\n").unwrap().check(), Ok(()));
        let neither = read("").unwrap().check().unwrap_err();
        assert!(neither.contains("freeze = true"), "{neither}");
        let both = read("delay = \"1s\"\nfreeze = true\n").unwrap().check();
        assert!(both.unwrap_err().contains("give one"));
        let zero = read("delay = \"0s\"\n").unwrap().check().unwrap_err();
        assert!(zero.contains("slows nothing"), "{zero}");
    }

    /// A cut reads from TOML with its direction (both ways unless said), names its client
    /// hosts as its targets (so `holder` is resolved to a host as for `isolate`), and refuses a
    /// field it does not have.
    #[test]
    fn a_cut_reads_as_a_table_and_its_clients_are_its_targets() {
        #[derive(Debug, Deserialize)]
        struct W {
            f: Fault,
        }
        let read = |split: &str| {
            toml::from_str::<W>(&format!("[f]\nfault = \"partition\"\nsplit = {split}\n"))
                .map(|w| w.f)
        };
        let cut = read(r#"{ cut = { clients = "holder", servers = "majority" } }"#).unwrap();
        assert_eq!(
            cut,
            Fault::Partition {
                split: PartitionSpec::Cut(Cut {
                    clients: Targets::Holder,
                    servers: Targets::Majority,
                    direction: CutDirection::Both,
                })
            }
        );
        assert_eq!(cut.route(), Route::Firewall);
        assert_eq!(cut.targets(), Some(&Targets::Holder));
        let on_host = cut
            .with_targets(Targets::Nodes(vec!["client2".into()]))
            .unwrap();
        let Fault::Partition {
            split: PartitionSpec::Cut(resolved),
        } = on_host
        else {
            panic!("{on_host:?}");
        };
        assert_eq!(resolved.clients, Targets::Nodes(vec!["client2".into()]));
        assert_eq!(resolved.servers, Targets::Majority);
        let replies = read(
            r#"{ cut = { clients = { nodes = ["client1"] }, servers = "leader", direction = "replies" } }"#,
        )
        .unwrap();
        assert!(matches!(
            replies,
            Fault::Partition {
                split: PartitionSpec::Cut(Cut {
                    direction: CutDirection::Replies,
                    ..
                })
            }
        ));
        let wrong = read(r#"{ cut = { clients = "holder", servers = "all", way = "both" } }"#)
            .unwrap_err()
            .to_string();
        assert!(wrong.contains("way"), "{wrong}");
    }

    /// `promote` is the server nemesis's, has no targets to rewrite, and its window ends at
    /// `heal` (which restarts the former leader).
    #[test]
    fn promote_is_a_server_fault_healed_by_heal() {
        assert_eq!(Fault::Promote.route(), Route::Servers);
        assert_eq!(Fault::Promote.inverse(), Some(Fault::Heal));
        assert_eq!(Fault::Promote.targets(), None);
        assert_eq!(Fault::Promote.with_targets(Targets::One), None);
        assert_eq!(Fault::Promote.check(), Ok(()));
    }
}
