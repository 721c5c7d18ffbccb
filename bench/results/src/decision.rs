//! The verdict suite's answer: which lock to pick, what it survived, how far it carried load.
//!
//! `lockbench run verdict` runs every backend through the parts that decide the choice (three
//! contention shapes, the holder pause with fencing, the fault run, failover, the herd, the
//! capacity knee), each a run directory of its own. [`decide`] reads those runs' results and
//! nothing else, and gives one [`Row`] per backend: throughput and p99 at each shape, the knee,
//! one [`Cell`] per [`FaultColumn`], the herd's wake-ups, and a link to each cell's evidence.
//! [`Pick`]s ("fastest", "fastest that stays safe under a holder pause", ...) are computed from
//! the rows, never written by hand. The result is `verdict.json` beside the parts, and the page,
//! the Markdown summary and the terminal table are renderings of it.

use crate::capacity::SizingVerdict;
use crate::expect::Outcome;
use crate::model::{BackendResult, Environment, RunResults};
use crate::{Status, Validity};
use lockbench_analysis::availability::Window;
use lockbench_core::{FaultKind, FindingKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Layout version of `verdict.json`.
pub const DECISION_SCHEMA_VERSION: u32 = 1;

/// A contention shape the suite measures every backend at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Concurrent clients.
    pub clients: u32,
    /// Lock keys they spread over.
    pub keys: u32,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.clients, self.keys)
    }
}

/// The shapes, in the table's order: one client alone, eight on one hot key, eight on eight.
pub const SHAPES: [Shape; 3] = [
    Shape {
        clients: 1,
        keys: 1,
    },
    Shape {
        clients: 8,
        keys: 1,
    },
    Shape {
        clients: 8,
        keys: 8,
    },
];

/// The contended shape picks are made at (eight clients on one key).
pub const CONTENDED: Shape = SHAPES[1];

/// One part of the suite: what its run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "part")]
pub enum Part {
    /// Throughput and latency without faults at one shape.
    Shape(Shape),
    /// The holder paused past its lock's life, then writing with its old token.
    HolderPause,
    /// Client partition, leader pause, leader partition, packet loss: one window each.
    Faults,
    /// The leader killed and a replica promoted.
    Failover,
    /// Notification fan-out, twenty clients queued on one key.
    Herd,
    /// The highest rate sustained within a p99 objective.
    Knee,
}

impl Part {
    /// The part's directory name inside the suite's directory.
    pub fn dir_name(self) -> String {
        match self {
            Part::Shape(s) => format!("shape-{}x{}", s.clients, s.keys),
            Part::HolderPause => "holder-pause".into(),
            Part::Faults => "faults".into(),
            Part::Failover => "failover".into(),
            Part::Herd => "herd".into(),
            Part::Knee => "knee".into(),
        }
    }

    /// What it measures, for progress lines and the page.
    pub fn title(self) -> String {
        match self {
            Part::Shape(s) => format!(
                "{} client{} on {} key{}",
                s.clients,
                plural(s.clients),
                s.keys,
                plural(s.keys)
            ),
            Part::HolderPause => "the holder paused past its lock's life (fencing)".into(),
            Part::Faults => {
                "a client partition, a leader pause, a leader partition, packet loss".into()
            }
            Part::Failover => "failover by promotion".into(),
            Part::Herd => "the herd: 20 clients queued on one key".into(),
            Part::Knee => "the capacity knee at a p99 objective".into(),
        }
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A fault column of the decision table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultColumn {
    /// The lock holder stopped (SIGSTOP) past its lock's life, then resumed.
    HolderPause,
    /// The lock holder's host cut from every server while the others keep theirs.
    ClientPartition,
    /// The leader (or primary) server stopped.
    LeaderPause,
    /// The leader isolated from every other host.
    LeaderPartition,
    /// A share of the packets between clients and servers dropped.
    PacketLoss,
    /// The leader killed and a replica promoted.
    Failover,
}

impl FaultColumn {
    /// Every column, in the table's order.
    pub const ALL: [FaultColumn; 6] = [
        FaultColumn::HolderPause,
        FaultColumn::ClientPartition,
        FaultColumn::LeaderPause,
        FaultColumn::LeaderPartition,
        FaultColumn::PacketLoss,
        FaultColumn::Failover,
    ];

    /// The column's heading.
    pub fn title(self) -> &'static str {
        match self {
            FaultColumn::HolderPause => "holder pause",
            FaultColumn::ClientPartition => "client partition",
            FaultColumn::LeaderPause => "leader pause",
            FaultColumn::LeaderPartition => "leader partition",
            FaultColumn::PacketLoss => "packet loss",
            FaultColumn::Failover => "failover",
        }
    }

    /// The part whose windows fill the column.
    pub fn part(self) -> Part {
        match self {
            FaultColumn::HolderPause => Part::HolderPause,
            FaultColumn::ClientPartition
            | FaultColumn::LeaderPause
            | FaultColumn::LeaderPartition
            | FaultColumn::PacketLoss => Part::Faults,
            FaultColumn::Failover => Part::Failover,
        }
    }

    /// The column a fault window belongs to: by its kind, and for a pause or a partition by
    /// whether it touched a client host (the holder) or only servers (the leader).
    pub fn of(w: &Window) -> Option<FaultColumn> {
        let on_client = w.targets.iter().any(|t| t.starts_with("client"));
        match w.fault {
            FaultKind::Pause if on_client => Some(FaultColumn::HolderPause),
            FaultKind::Pause => Some(FaultColumn::LeaderPause),
            FaultKind::Partition if on_client => Some(FaultColumn::ClientPartition),
            FaultKind::Partition => Some(FaultColumn::LeaderPartition),
            FaultKind::PacketLoss => Some(FaultColumn::PacketLoss),
            FaultKind::Promote => Some(FaultColumn::Failover),
            FaultKind::Heal
            | FaultKind::Resume
            | FaultKind::Kill
            | FaultKind::Start
            | FaultKind::ClockJump
            | FaultKind::Clock
            | FaultKind::Disk
            | FaultKind::LinkDelay
            | FaultKind::LinkBlackhole
            | FaultKind::RedisFailover
            | FaultKind::Resign
            | FaultKind::End => None,
        }
    }
}

/// What a backend showed under one fault.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cell")]
pub enum Cell {
    /// No violation in or just after the fault's windows, with grants made around them.
    Safe {
        /// Windows applied.
        windows: u64,
        /// Grants during and after the windows.
        grants: u64,
        /// The longest time from a window's end to the next grant, ms.
        recovery_ms: Option<f64>,
    },
    /// Two clients believed they held the lock, but the resource rejected every late write:
    /// the fencing token did its job.
    Fenced {
        /// The violations found (`mutex`).
        kinds: Vec<String>,
        /// Late writes the resource rejected.
        rejected: u64,
    },
    /// Late writes of a client whose lock was gone were accepted: data damaged.
    Damaged {
        /// The violations found.
        kinds: Vec<String>,
        /// Late writes accepted.
        accepted: u64,
    },
    /// Mutual exclusion broken (or a lock released or renewed for another client) with no
    /// write to show it stopped.
    Violated {
        /// The violations found.
        kinds: Vec<String>,
    },
    /// The fault ran, but the run cannot say (no verdict, nothing granted).
    Unknown {
        /// Why.
        why: String,
    },
    /// The fault was requested and could not be applied here.
    NotApplied {
        /// The nemesis's reason.
        why: String,
    },
    /// The fault does not apply to this backend, or its part did not run it.
    NotApplicable {
        /// Why.
        why: String,
    },
}

impl Cell {
    /// The one word the table shows.
    pub fn word(&self) -> &'static str {
        match self {
            Cell::Safe { .. } => "safe",
            Cell::Fenced { .. } => "fenced",
            Cell::Damaged { .. } => "damaged",
            Cell::Violated { .. } => "violated",
            Cell::Unknown { .. } => "unknown",
            Cell::NotApplied { .. } => "not applied",
            Cell::NotApplicable { .. } => "n/a",
        }
    }

    /// The figures or the reason behind the word.
    pub fn detail(&self) -> String {
        match self {
            Cell::Safe {
                windows,
                grants,
                recovery_ms,
            } => {
                let recovery = recovery_ms
                    .map(|ms| format!(", next grant {ms:.0} ms after"))
                    .unwrap_or_default();
                format!(
                    "no violation in {windows} window{}; {grants} grants during and after{recovery}",
                    plural(*windows as u32)
                )
            }
            Cell::Fenced { kinds, rejected } => {
                format!("{}; {rejected} late writes rejected", kinds.join(", "))
            }
            Cell::Damaged { kinds, accepted } => {
                format!("{}; {accepted} late writes accepted", kinds.join(", "))
            }
            Cell::Violated { kinds } => kinds.join(", "),
            Cell::Unknown { why } | Cell::NotApplied { why } | Cell::NotApplicable { why } => {
                why.clone()
            }
        }
    }

    /// `true` for a cell that shows harm: mutual exclusion broken without fencing to stop it.
    pub fn harmful(&self) -> bool {
        matches!(self, Cell::Damaged { .. } | Cell::Violated { .. })
    }

    /// `true` when the backend kept its promise under the fault: no violation, or one the
    /// fencing token stopped.
    pub fn held(&self) -> bool {
        matches!(self, Cell::Safe { .. } | Cell::Fenced { .. })
    }
}

/// A cell with the page that shows why (relative to the suite's directory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence<T> {
    /// What was found.
    #[serde(flatten)]
    pub cell: T,
    /// The part's report, at the section that shows it; absent when the part did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// Throughput and tail latency at one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cell")]
pub enum Perf {
    /// Measured.
    Measured {
        /// Acquisitions per second.
        throughput_per_s: f64,
        /// Acquire latency p99, µs (coordinated-omission corrected).
        p99_us: Option<u64>,
        /// Requests per acquisition the servers saw (or lockbench counted).
        requests_per_acquisition: Option<f64>,
        /// lockbench itself was the limit: the throughput is a lower bound.
        #[serde(default)]
        generator_bound: bool,
    },
    /// The backend could not run at this shape, or its part did not run.
    Missing {
        /// Why.
        why: String,
    },
}

/// The capacity knee.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cell")]
pub enum Knee {
    /// The search ended.
    Found {
        /// The highest rate sustained within the objective, acquisitions/s.
        rate_per_s: Option<f64>,
        /// How far it can be trusted.
        verdict: SizingVerdict,
        /// What limited the search.
        note: String,
    },
    /// No search for this backend.
    Missing {
        /// Why.
        why: String,
    },
}

/// The herd's notification fan-out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "cell")]
pub enum Herd {
    /// Counted.
    Counted {
        /// Watch notifications handed to waiters per release.
        wakeups_per_release: Option<f64>,
        /// Requests waiters sent in reaction, per release.
        requests_per_release: Option<f64>,
        /// Acquisitions per second with twenty clients queued.
        throughput_per_s: f64,
    },
    /// Not counted for this backend.
    Missing {
        /// Why.
        why: String,
    },
}

/// One backend's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Recipe name.
    pub backend: String,
    /// A deliberately broken recipe (shown in red; never picked).
    pub broken: bool,
    /// One cell per [`SHAPES`] entry, in order.
    pub shapes: Vec<Evidence<Perf>>,
    /// The capacity knee.
    pub knee: Evidence<Knee>,
    /// One cell per [`FaultColumn::ALL`] entry, in order.
    pub faults: Vec<(FaultColumn, Evidence<Cell>)>,
    /// The herd.
    pub herd: Evidence<Herd>,
}

impl Row {
    /// The cell of `column`.
    pub fn fault(&self, column: FaultColumn) -> Option<&Evidence<Cell>> {
        self.faults
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, e)| e)
    }

    /// Throughput at `shape`, when measured.
    pub fn throughput(&self, shape: Shape) -> Option<f64> {
        let i = SHAPES.iter().position(|s| *s == shape)?;
        match &self.shapes.get(i)?.cell {
            Perf::Measured {
                throughput_per_s, ..
            } => Some(*throughput_per_s),
            Perf::Missing { .. } => None,
        }
    }

    /// Requests per acquisition at `shape`, when known.
    pub fn requests(&self, shape: Shape) -> Option<f64> {
        let i = SHAPES.iter().position(|s| *s == shape)?;
        match &self.shapes.get(i)?.cell {
            Perf::Measured {
                requests_per_acquisition,
                ..
            } => *requests_per_acquisition,
            Perf::Missing { .. } => None,
        }
    }

    /// `true` when a fault cell shows harm.
    pub fn harmed(&self) -> bool {
        self.faults.iter().any(|(_, e)| e.cell.harmful())
    }
}

/// Why a backend is picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PickReason {
    /// The most acquisitions per second at eight clients on one key.
    Fastest,
    /// The fastest whose every applied fault cell is safe or fenced.
    FastestSafeUnderEveryFault,
    /// The fastest that is safe or fenced under the holder pause.
    FastestSafeUnderPause,
    /// The fewest requests per acquisition at eight clients on one key.
    FewestRequests,
    /// The highest knee.
    HighestKnee,
    /// The fewest wake-ups per release in the herd.
    QuietestHerd,
}

impl PickReason {
    /// Every reason, in the page's order.
    pub const ALL: [PickReason; 6] = [
        PickReason::FastestSafeUnderEveryFault,
        PickReason::FastestSafeUnderPause,
        PickReason::Fastest,
        PickReason::HighestKnee,
        PickReason::FewestRequests,
        PickReason::QuietestHerd,
    ];

    /// "Pick this if you need ...".
    pub fn need(self) -> &'static str {
        match self {
            PickReason::Fastest => "the most throughput on a hot key, faults aside",
            PickReason::FastestSafeUnderEveryFault => {
                "the most throughput that stayed safe (or fenced) under every fault here"
            }
            PickReason::FastestSafeUnderPause => {
                "the most throughput that stayed safe (or fenced) when its holder paused"
            }
            PickReason::FewestRequests => "the least work for the servers per acquisition",
            PickReason::HighestKnee => "the highest rate within the p99 objective",
            PickReason::QuietestHerd => "the fewest wake-ups when many clients wait",
        }
    }
}

/// A backend picked for a reason, with the figure that decided it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// Why.
    pub reason: PickReason,
    /// Recipe name.
    pub backend: String,
    /// The deciding figure.
    pub figure: String,
}

/// One part's run, as the suite records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    /// Which part.
    pub part: Part,
    /// Its run directory, relative to the suite's.
    pub dir: String,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Backends it ran.
    pub backends: Vec<String>,
    /// Its expectations met, failed, unknown.
    pub expectations: [u64; 3],
    /// `false` when it was interrupted or did not run.
    pub complete: bool,
}

impl PartRecord {
    /// The part's worst expectation outcome.
    pub fn worst(&self) -> Option<Outcome> {
        let [met, failed, unknown] = self.expectations;
        if failed > 0 {
            Some(Outcome::Failed)
        } else if unknown > 0 {
            Some(Outcome::Unknown)
        } else if met > 0 {
            Some(Outcome::Met)
        } else {
            None
        }
    }
}

/// `verdict.json`: the suite's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Layout version ([`DECISION_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// When the suite started (RFC 3339, UTC).
    pub started_at: String,
    /// The seed every part ran with.
    pub seed: u64,
    /// The time the suite was given, seconds.
    pub budget_s: f64,
    /// The time it took, seconds.
    pub wall_s: f64,
    /// `false` when interrupted.
    pub complete: bool,
    /// The cluster (`managed`, `compose`, `external:FILE`).
    pub cluster: String,
    /// How lockbench reached each group of servers (TLS, authentication), as a run records it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connections: BTreeMap<String, lockbench_core::ConnectionSummary>,
    /// The machine, the servers' versions, the load, lockbench's version.
    pub environment: Environment,
    /// The p99 objective of the knee, ms.
    pub slo_p99_ms: f64,
    /// The parts, in the order they ran.
    pub parts: Vec<PartRecord>,
    /// One row per backend, in the order given.
    pub rows: Vec<Row>,
    /// What to pick for which need.
    pub picks: Vec<Pick>,
}

impl Decision {
    /// The worst expectation outcome over every part.
    pub fn worst(&self) -> Option<Outcome> {
        self.parts.iter().filter_map(PartRecord::worst).max()
    }
}

/// One part's run, as [`decide`] reads it.
pub struct PartRun<'a> {
    /// Which part.
    pub part: Part,
    /// Its run directory, relative to the suite's.
    pub dir: String,
    /// Its results.
    pub results: &'a RunResults,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Backends the part did not run, each with why.
    pub skipped: BTreeMap<String, String>,
}

/// A backend the suite covers.
pub struct Subject {
    /// Recipe name.
    pub backend: String,
    /// Deliberately broken.
    pub broken: bool,
    /// Why its servers have no leader (independent Redlock servers), when they have none: a
    /// fault aimed at the leader does not apply to it.
    pub no_leader: Option<String>,
}

/// The report's section for each kind of evidence.
mod anchor {
    pub const SUMMARY: &str = "summary";
    pub const EXCERPTS: &str = "excerpts";
    pub const SCORECARD: &str = "scorecard";
    pub const FANOUT: &str = "fanout";
    pub const CAPACITY: &str = "capacity";
}

fn link(dir: &str, section: &str) -> Option<String> {
    Some(format!("{dir}/report.html#{section}"))
}

/// The suite's answer from its parts' results (see the module docs). `header` holds what the
/// suite knew before it ran (started, seed, budget, wall time, cluster, environment, objective);
/// its `parts`, `rows` and `picks` are filled here.
pub fn decide(mut header: Decision, subjects: &[Subject], parts: &[PartRun<'_>]) -> Decision {
    header.parts = parts.iter().map(record).collect();
    header.rows = subjects.iter().map(|s| row(s, parts)).collect();
    header.picks = picks(&header.rows);
    header
}

fn record(p: &PartRun<'_>) -> PartRecord {
    let count = |o: Outcome| {
        p.results
            .expectations
            .iter()
            .filter(|e| e.outcome == o)
            .count() as u64
    };
    PartRecord {
        part: p.part,
        dir: p.dir.clone(),
        wall_s: p.wall_s,
        backends: p
            .results
            .results
            .iter()
            .map(|r| r.backend.clone())
            .collect(),
        expectations: [
            count(Outcome::Met),
            count(Outcome::Failed),
            count(Outcome::Unknown),
        ],
        complete: p.results.complete,
    }
}

/// The part of kind `part`, and `backend`'s result in it (or why there is none).
fn find<'a>(
    parts: &'a [PartRun<'a>],
    part: Part,
    backend: &str,
) -> Result<(&'a PartRun<'a>, &'a BackendResult), String> {
    let Some(p) = parts.iter().find(|p| p.part == part) else {
        return Err(format!("{} did not run", part.title()));
    };
    if let Some(why) = p.skipped.get(backend) {
        return Err(why.clone());
    }
    match p.results.results.iter().find(|r| r.backend == backend) {
        None => Err(format!("{} stopped before {backend}", part.title())),
        Some(r) if r.status != Status::Ok => Err(r
            .error
            .clone()
            .unwrap_or_else(|| r.status.name().to_string())),
        Some(r) => Ok((p, r)),
    }
}

fn row(s: &Subject, parts: &[PartRun<'_>]) -> Row {
    let backend = s.backend.as_str();
    let shapes = SHAPES
        .iter()
        .map(|&shape| match find(parts, Part::Shape(shape), backend) {
            Ok((p, r)) => Evidence {
                cell: Perf::Measured {
                    throughput_per_s: r.throughput_per_s,
                    p99_us: r.acquire_latency_us.as_ref().map(|l| l.p99),
                    requests_per_acquisition: r.server_ops_per_acquisition,
                    generator_bound: r.resources.as_ref().is_some_and(|u| u.generator_bound),
                },
                link: link(&p.dir, anchor::SUMMARY),
            },
            Err(why) => Evidence {
                cell: Perf::Missing { why },
                link: None,
            },
        })
        .collect();
    let faults = FaultColumn::ALL
        .iter()
        .map(|&column| {
            let evidence = match find(parts, column.part(), backend) {
                Err(why) => Evidence {
                    cell: Cell::NotApplicable { why },
                    link: None,
                },
                Ok((p, r)) => {
                    let windows: Vec<&Window> = r
                        .fault_windows
                        .iter()
                        .filter(|w| FaultColumn::of(w) == Some(column))
                        .collect();
                    let cell = match (&s.no_leader, column) {
                        (Some(why), FaultColumn::LeaderPause | FaultColumn::LeaderPartition)
                            if windows.iter().all(|w| !w.applied) =>
                        {
                            Cell::NotApplicable { why: why.clone() }
                        }
                        _ => judge(&windows, r),
                    };
                    let section = if cell.harmful() {
                        anchor::EXCERPTS
                    } else {
                        anchor::SCORECARD
                    };
                    Evidence {
                        cell,
                        link: link(&p.dir, section),
                    }
                }
            };
            (column, evidence)
        })
        .collect();
    let knee = match parts.iter().find(|p| p.part == Part::Knee) {
        None => Evidence {
            cell: Knee::Missing {
                why: format!("{} did not run", Part::Knee.title()),
            },
            link: None,
        },
        Some(p) => match p.skipped.get(backend) {
            Some(why) => Evidence {
                cell: Knee::Missing { why: why.clone() },
                link: None,
            },
            None => knee(p, backend),
        },
    };
    let herd = match find(parts, Part::Herd, backend) {
        Err(why) => Evidence {
            cell: Herd::Missing { why },
            link: None,
        },
        Ok((p, r)) => Evidence {
            cell: match &r.fanout {
                Some(f) => Herd::Counted {
                    wakeups_per_release: f.notifications_per_release,
                    requests_per_release: f.server_requests_per_release,
                    throughput_per_s: r.throughput_per_s,
                },
                None => Herd::Missing {
                    why: format!("{backend} does not count its wake-ups"),
                },
            },
            link: link(&p.dir, anchor::FANOUT),
        },
    };
    Row {
        backend: s.backend.clone(),
        broken: s.broken,
        shapes,
        knee,
        faults,
        herd,
    }
}

/// The knee search's sizing row for `backend` (the part's results hold a result only for a
/// backend whose search found a knee step; the row says what happened to the others).
fn knee(p: &PartRun<'_>, backend: &str) -> Evidence<Knee> {
    let row = p
        .results
        .capacity
        .as_ref()
        .and_then(|c| c.sizing.iter().find(|r| r.backend == backend));
    match row {
        Some(r) => Evidence {
            cell: Knee::Found {
                rate_per_s: r.max_rate_per_s,
                verdict: r.verdict,
                note: r.note.clone(),
            },
            link: link(&p.dir, anchor::CAPACITY),
        },
        None => Evidence {
            cell: Knee::Missing {
                why: format!("the knee search stopped before {backend}"),
            },
            link: None,
        },
    }
}

/// The cell for `windows` (one column's windows of `r`).
pub fn judge(windows: &[&Window], r: &BackendResult) -> Cell {
    if windows.is_empty() {
        return Cell::Unknown {
            why: "the part ran, but no window of this fault is in its history (one not \
                  applied, aimed at the lock's holder while nobody held it, has no targets to \
                  tell it by)"
                .into(),
        };
    }
    let applied: Vec<&&Window> = windows.iter().filter(|w| w.applied).collect();
    if applied.is_empty() {
        return Cell::NotApplied {
            why: windows[0].note.clone(),
        };
    }
    if r.safety.verdict == Validity::Unknown {
        return Cell::Unknown {
            why: format!("no safety verdict: {}", r.safety.failed_checkers.join("; ")),
        };
    }
    if r.acquisitions_total == 0 {
        return Cell::Unknown {
            why: "nothing was granted: no grant, no verdict".into(),
        };
    }
    let mut found: BTreeMap<FindingKind, u64> = BTreeMap::new();
    let mut rejected = 0;
    for w in &applied {
        for (name, n) in &w.violations {
            if let Some(kind) = FindingKind::ALL.iter().find(|k| k.name() == name) {
                *found.entry(*kind).or_insert(0) += n;
            }
        }
        rejected += w.fenced.values().sum::<u64>();
    }
    let kinds: Vec<String> = found.iter().map(|(k, n)| k.counted(*n)).collect();
    let accepted = found.get(&FindingKind::StaleWriteAccepted).unwrap_or(&0)
        + found
            .get(&FindingKind::WriteAfterLockLostAccepted)
            .unwrap_or(&0);
    let only_overlap = found.keys().all(|k| *k == FindingKind::Mutex);
    if accepted > 0 {
        Cell::Damaged { kinds, accepted }
    } else if found.is_empty() {
        Cell::Safe {
            windows: applied.len() as u64,
            grants: applied.iter().map(|w| w.during.ok + w.after.ok).sum(),
            recovery_ms: applied
                .iter()
                .filter_map(|w| w.recovery_ms)
                .reduce(f64::max),
        }
    } else if only_overlap && rejected > 0 {
        Cell::Fenced { kinds, rejected }
    } else {
        Cell::Violated { kinds }
    }
}

/// The picks: for each reason the best backend that is not a broken recipe.
fn picks(rows: &[Row]) -> Vec<Pick> {
    let candidates: Vec<&Row> = rows.iter().filter(|r| !r.broken).collect();
    let fastest = |filter: &dyn Fn(&Row) -> bool| {
        candidates
            .iter()
            .filter(|r| filter(r))
            .filter_map(|r| r.throughput(CONTENDED).map(|t| (*r, t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(r, t)| (r, format!("{t:.0} acq/s at {CONTENDED} clients/keys")))
    };
    let mut out = Vec::new();
    for reason in PickReason::ALL {
        let best: Option<(&Row, String)> = match reason {
            PickReason::Fastest => fastest(&|_| true),
            PickReason::FastestSafeUnderEveryFault => fastest(&|r| {
                let applied: Vec<&Cell> = r
                    .faults
                    .iter()
                    .map(|(_, e)| &e.cell)
                    .filter(|c| !matches!(c, Cell::NotApplicable { .. } | Cell::NotApplied { .. }))
                    .collect();
                !applied.is_empty() && applied.iter().all(|c| c.held())
            }),
            PickReason::FastestSafeUnderPause => fastest(&|r| {
                r.fault(FaultColumn::HolderPause)
                    .is_some_and(|e| e.cell.held())
            }),
            PickReason::FewestRequests => candidates
                .iter()
                .filter_map(|r| r.requests(CONTENDED).map(|q| (*r, q)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, q)| (r, format!("{q:.2} requests per acquisition"))),
            PickReason::HighestKnee => candidates
                .iter()
                .filter_map(|r| match &r.knee.cell {
                    Knee::Found {
                        rate_per_s: Some(rate),
                        verdict: SizingVerdict::Ok,
                        ..
                    } => Some((*r, *rate)),
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, rate)| (r, format!("{rate:.0} acq/s within the objective"))),
            PickReason::QuietestHerd => candidates
                .iter()
                .filter_map(|r| match &r.herd.cell {
                    Herd::Counted {
                        wakeups_per_release: Some(w),
                        ..
                    } => Some((*r, *w)),
                    _ => None,
                })
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, w)| (r, format!("{w:.2} wake-ups per release"))),
        };
        if let Some((r, figure)) = best {
            out.push(Pick {
                reason,
                backend: r.backend.clone(),
                figure,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_analysis::availability::Span;

    fn ok(backend: &str, throughput: f64) -> BackendResult {
        let mut r = crate::expect::tests::invalid(backend, &[]);
        r.safety.verdict = Validity::Valid;
        r.acquisitions_total = 1000;
        r.throughput_per_s = throughput;
        r
    }

    fn window(fault: FaultKind, targets: &[&str], violations: &[(&str, u64)]) -> Window {
        let granting = Span {
            ok: 40,
            ..Span::default()
        };
        Window {
            fault,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            applied: true,
            note: "applied".into(),
            end_note: String::new(),
            start_s: 1.0,
            end_s: 2.0,
            before: Span::default(),
            during: granting.clone(),
            after: granting,
            recovery_ms: Some(12.0),
            violations: violations
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
            fenced: Default::default(),
        }
    }

    fn results(rs: Vec<BackendResult>) -> RunResults {
        RunResults {
            schema_version: crate::SCHEMA_VERSION,
            scenario: "t".into(),
            seed: 1,
            started_at: String::new(),
            complete: true,
            cluster: "managed".into(),
            connections: Default::default(),
            environment: crate::environment::detect(Default::default()),
            results: rs,
            scorecard: None,
            capacity: None,
            expectations: Vec::new(),
        }
    }

    fn header() -> Decision {
        Decision {
            schema_version: DECISION_SCHEMA_VERSION,
            started_at: String::new(),
            seed: 1,
            budget_s: 1200.0,
            wall_s: 0.0,
            complete: true,
            cluster: "managed".into(),
            connections: Default::default(),
            environment: crate::environment::detect(Default::default()),
            slo_p99_ms: 50.0,
            parts: Vec::new(),
            rows: Vec::new(),
            picks: Vec::new(),
        }
    }

    fn subject(backend: &str, broken: bool) -> Subject {
        Subject {
            backend: backend.into(),
            broken,
            no_leader: None,
        }
    }

    #[test]
    fn a_window_goes_to_the_column_of_its_kind_and_whom_it_hit() {
        let of = |kind, targets: &[&str]| FaultColumn::of(&window(kind, targets, &[]));
        assert_eq!(
            of(FaultKind::Pause, &["client1"]),
            Some(FaultColumn::HolderPause)
        );
        assert_eq!(
            of(FaultKind::Pause, &["zk2"]),
            Some(FaultColumn::LeaderPause)
        );
        assert_eq!(
            of(FaultKind::Partition, &["client2", "zk1", "zk2", "zk3"]),
            Some(FaultColumn::ClientPartition)
        );
        assert_eq!(
            of(FaultKind::Partition, &["zk2"]),
            Some(FaultColumn::LeaderPartition)
        );
        assert_eq!(
            of(FaultKind::PacketLoss, &[]),
            Some(FaultColumn::PacketLoss)
        );
        assert_eq!(
            of(FaultKind::Promote, &["pg2"]),
            Some(FaultColumn::Failover)
        );
        assert_eq!(of(FaultKind::LinkDelay, &[]), None);
    }

    #[test]
    fn a_cell_says_safe_fenced_damaged_or_violated_from_what_its_windows_found() {
        let r = ok("zk-fair", 100.0);
        let judged = |w: Window| judge(&[&w], &r);
        assert!(matches!(
            judged(window(FaultKind::Pause, &["zk1"], &[])),
            Cell::Safe {
                windows: 1,
                grants: 80,
                ..
            }
        ));
        let mut fenced = window(FaultKind::Pause, &["client1"], &[("mutex", 2)]);
        fenced.fenced.insert("stale_write_rejected".into(), 3);
        assert_eq!(
            judged(fenced),
            Cell::Fenced {
                kinds: vec!["2 overlaps".into()],
                rejected: 3
            }
        );
        let damaged = window(
            FaultKind::Pause,
            &["client1"],
            &[("mutex", 1), ("write_after_lock_lost_accepted", 2)],
        );
        assert!(matches!(judged(damaged), Cell::Damaged { accepted: 2, .. }));
        let overlap_unwritten = window(FaultKind::Pause, &["client1"], &[("mutex", 1)]);
        assert!(matches!(judged(overlap_unwritten), Cell::Violated { .. }));
        let mut released = window(
            FaultKind::Pause,
            &["client1"],
            &[("mutex", 1), ("foreign_release", 4)],
        );
        released.fenced.insert("stale_write_rejected".into(), 1);
        assert_eq!(
            judged(released),
            Cell::Violated {
                kinds: vec![
                    "1 overlap".into(),
                    "4 releases of another client's lock".into()
                ]
            }
        );
    }

    /// Zero acquisitions, no verdict, a fault never applied: never "safe".
    #[test]
    fn a_cell_without_grants_verdict_or_applied_fault_is_not_safe() {
        let w = window(FaultKind::Pause, &["zk1"], &[]);
        let mut idle = ok("zk-fair", 0.0);
        idle.acquisitions_total = 0;
        assert!(matches!(judge(&[&w], &idle), Cell::Unknown { .. }));
        let mut blind = ok("zk-fair", 10.0);
        blind.safety.verdict = Validity::Unknown;
        assert!(matches!(judge(&[&w], &blind), Cell::Unknown { .. }));
        let mut missed = w.clone();
        missed.applied = false;
        missed.note = "no namespaces".into();
        assert_eq!(
            judge(&[&missed], &ok("zk-fair", 10.0)),
            Cell::NotApplied {
                why: "no namespaces".into()
            }
        );
        assert!(matches!(
            judge(&[], &ok("zk-fair", 10.0)),
            Cell::Unknown { .. }
        ));
    }

    #[test]
    fn rows_link_their_evidence_say_why_a_part_left_them_out_and_picks_skip_broken_recipes() {
        let fast_broken = ok("redis-broken-release", 900.0);
        let slow = ok("zk-fair", 300.0);
        let contended = results(vec![slow.clone(), fast_broken.clone()]);
        let mut paused_fine = slow.clone();
        paused_fine
            .fault_windows
            .push(window(FaultKind::Pause, &["client1"], &[]));
        let mut paused_bad = fast_broken.clone();
        paused_bad.fault_windows.push(window(
            FaultKind::Pause,
            &["client1"],
            &[("foreign_release", 1)],
        ));
        let pause = results(vec![paused_fine, paused_bad]);
        let empty = results(Vec::new());
        let skipped: BTreeMap<String, String> = [
            (
                "zk-fair".to_string(),
                "zookeeper has no replica to promote".to_string(),
            ),
            (
                "redis-broken-release".to_string(),
                "redis has none".to_string(),
            ),
        ]
        .into();
        let parts = [
            PartRun {
                part: Part::Shape(CONTENDED),
                dir: "shape-8x1".into(),
                results: &contended,
                wall_s: 10.0,
                skipped: BTreeMap::new(),
            },
            PartRun {
                part: Part::HolderPause,
                dir: "holder-pause".into(),
                results: &pause,
                wall_s: 20.0,
                skipped: BTreeMap::new(),
            },
            PartRun {
                part: Part::Failover,
                dir: "failover".into(),
                results: &empty,
                wall_s: 0.0,
                skipped,
            },
        ];
        let d = decide(
            header(),
            &[
                subject("zk-fair", false),
                subject("redis-broken-release", true),
            ],
            &parts,
        );
        let zk = &d.rows[0];
        assert_eq!(zk.throughput(CONTENDED), Some(300.0));
        assert_eq!(
            zk.shapes[1].link.as_deref(),
            Some("shape-8x1/report.html#summary")
        );
        assert!(matches!(zk.shapes[0].cell, Perf::Missing { .. }));
        let pause_cell = zk.fault(FaultColumn::HolderPause).unwrap();
        assert!(matches!(pause_cell.cell, Cell::Safe { .. }));
        assert_eq!(
            zk.fault(FaultColumn::Failover).unwrap().cell,
            Cell::NotApplicable {
                why: "zookeeper has no replica to promote".into()
            }
        );
        assert!(matches!(
            zk.fault(FaultColumn::LeaderPause).unwrap().cell,
            Cell::NotApplicable { .. }
        ));
        let broken = &d.rows[1];
        assert!(broken.broken && broken.harmed());
        assert_eq!(
            broken
                .fault(FaultColumn::HolderPause)
                .unwrap()
                .link
                .as_deref(),
            Some("holder-pause/report.html#excerpts")
        );
        // The broken recipe is faster, and never picked.
        assert!(
            d.picks.iter().all(|p| p.backend == "zk-fair"),
            "{:?}",
            d.picks
        );
        assert!(
            d.picks
                .iter()
                .any(|p| p.reason == PickReason::FastestSafeUnderPause)
        );
        assert_eq!(d.parts.len(), 3);
        assert_eq!(d.parts[2].backends, Vec::<String>::new());
    }
}
