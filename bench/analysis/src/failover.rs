//! The failover checker: from an election history, how fast a removed leader was replaced,
//! how fast every candidate learned it, and whether two candidates ever led at once.
//!
//! Inputs (see `lockbench_core::election` for the op kinds):
//! - **terms**: a candidate's `campaign ok` (epoch in `token`) opens its term; its
//!   `leader-lost`, its `resign` invoke, or a `kill` of its process closes it. A paused leader's
//!   term stays open until it wakes and learns it is over: that is what a paused leader
//!   believes, and what a GC-paused server would act on.
//! - **removals**: the fault events that remove a leader, each at the moment it was applied:
//!   `resign`, `kill`, `pause` or `partition` targeting a candidate (`c<N>`), and `kill` of a
//!   server (`server-kill`). Each removal's window runs until the next removal, or until the
//!   `end` event (the coordinator telling every candidate to stop), or the history's end.
//! - **observations**: `observe ok` ops, naming the leader's candidate in `key` and its epoch in
//!   `token`.
//!
//! Per removal it computes the time from the removal to the first new term (a leadership
//! other than the removed one: another epoch); the time until every live candidate (not the
//! killed, paused or cut-off one) has observed that new leader; the elections (terms begun) in the
//! window; and the split-brain overlap begun in the window. **Split brain** is any span in which
//! two candidates' terms are both open, reported with both epochs (fencing tokens). After a
//! `server-kill` the leader often survives: then `leader_kept` is counted instead of a time.

use lockbench_core::{FaultKind, FaultPhase, History, Nanos, OpF, OpType, Removal};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A leadership as the history names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TermId {
    /// The candidate that led.
    pub candidate: u32,
    /// Its epoch (fencing token).
    pub epoch: u64,
}

/// One term: from the candidate's `campaign ok` until it stopped believing it led.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Term {
    id: TermId,
    start: Nanos,
    end: Nanos,
}

/// Two candidates believing they led at the same time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitBrain {
    /// When the overlap began, seconds on the run clock.
    pub at_s: f64,
    /// How long it lasted, ms.
    pub ms: f64,
    /// The term that began first (typically the removed or paused leader).
    pub older: TermId,
    /// The term that began while `older` was still open.
    pub newer: TermId,
}

/// One leader removal and what followed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// `resign`, `kill`, `pause`, `partition` or `server-kill`.
    pub removal: Removal,
    /// When it was applied, seconds on the run clock.
    pub at_s: f64,
    /// What it targeted (`c3`, or server names).
    pub targets: Vec<String>,
    /// The leadership in force when it was applied, if any.
    pub old_leader: Option<TermId>,
    /// The first other leadership begun after it, if any (before the next removal).
    pub new_leader: Option<TermId>,
    /// Removal to the new leader's `campaign ok`, ms.
    pub time_to_new_leader_ms: Option<f64>,
    /// Removal to the moment the last live candidate observed the new leader, ms.
    pub time_to_all_observed_ms: Option<f64>,
    /// Terms begun in this removal's window.
    pub elections: u64,
    /// Split-brain overlap begun in this removal's window, ms (0 when none).
    pub split_brain_ms: f64,
    /// The removed leader was still leading at the end of the window, nobody else was
    /// elected (a server fault the leader survived).
    pub leader_kept: bool,
}

/// A distribution of milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MsStats {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl MsStats {
    /// The distribution of `values`, or `None` when there are none.
    pub fn of(values: &[f64]) -> Option<MsStats> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(MsStats {
            count: v.len() as u64,
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// Figures over a set of removals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Removals applied.
    pub failures: u64,
    /// Removals after which no other leader was elected in the window (the removed leader
    /// kept leading, or nobody led).
    pub no_new_leader: u64,
    /// ... of which the removed leader kept leading (server faults it survived).
    pub leader_kept: u64,
    /// Removals with a new leader that some live candidate never observed in the window.
    pub not_all_observed: u64,
    /// Terms begun per removal (1 = one clean election).
    pub elections_per_failure: Option<f64>,
    /// Removal to new leader elected, ms.
    pub time_to_new_leader_ms: Option<MsStats>,
    /// Removal to every live candidate observing the new leader, ms.
    pub time_to_all_observed_ms: Option<MsStats>,
    /// Split-brain overlap per removal, ms (zeros included).
    pub split_brain_ms: Option<MsStats>,
    /// Removals with any split brain.
    pub split_brain_failures: u64,
    /// Removals that could not be applied here (a partition without network namespaces, a
    /// server kill on a cluster lockbench does not manage): reported, never silently skipped.
    pub not_applied: u64,
}

/// Everything the failover checker finds in one history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailoverFigures {
    /// Over every removal.
    #[serde(flatten)]
    pub overall: Summary,
    /// Per removal kind (`resign`, `kill`, `pause`, `partition`, `server-kill`).
    pub by_removal: BTreeMap<String, Summary>,
    /// Every split-brain episode, anywhere in the run.
    pub split_brain: Vec<SplitBrain>,
    /// Terms whose epoch was lower than an earlier term's (the epoch counter went back:
    /// fencing tokens from it would let a stale leader through).
    pub epoch_regressions: u64,
    /// Every removal in order.
    pub rounds: Vec<Failure>,
}

fn ms(d: Nanos, from: Nanos) -> f64 {
    d.saturating_sub(from).as_secs_f64() * 1e3
}

fn secs(t: Nanos) -> f64 {
    t.as_duration().as_secs_f64()
}

/// `c<N>` -> N.
fn candidate_of(target: &str) -> Option<u32> {
    target.strip_prefix('c')?.parse().ok()
}

/// A removal as the history records it.
struct Removed<'a> {
    kind: Removal,
    at: Nanos,
    targets: &'a [String],
    candidate: Option<u32>,
}

/// When the rounds ended: the `end` event, if any.
fn rounds_end(history: &History) -> Option<Nanos> {
    history
        .faults()
        .iter()
        .find(|f| f.fault == FaultKind::End)
        .map(|f| f.time)
}

/// The removals applied (`applied`) or reported as impossible here (`!applied`).
fn removals(history: &History, applied: bool) -> Vec<Removed<'_>> {
    history
        .faults()
        .iter()
        .filter(|f| f.phase == FaultPhase::Start && f.applied == applied)
        .filter_map(|f| {
            let candidate = f.targets.first().and_then(|t| candidate_of(t));
            let kind = match (f.fault, candidate) {
                (FaultKind::Resign, Some(_)) => Removal::Resign,
                (FaultKind::Kill, Some(_)) => Removal::Kill,
                (FaultKind::Pause, Some(_)) => Removal::Pause,
                (FaultKind::Partition, Some(_)) => Removal::Partition,
                (FaultKind::Kill, None) => Removal::ServerKill,
                (FaultKind::Resign | FaultKind::Pause | FaultKind::Partition, None)
                | (
                    FaultKind::Heal
                    | FaultKind::Resume
                    | FaultKind::Start
                    | FaultKind::ClockJump
                    | FaultKind::Clock
                    | FaultKind::Disk
                    | FaultKind::LinkDelay
                    | FaultKind::LinkBlackhole
                    | FaultKind::PacketLoss
                    | FaultKind::RedisFailover
                    | FaultKind::Promote
                    | FaultKind::End,
                    _,
                ) => return None,
            };
            Some(Removed {
                kind,
                at: f.time,
                targets: &f.targets,
                candidate,
            })
        })
        .collect()
}

/// Terms, in order of their start, and when each candidate was killed.
fn terms(history: &History, removals: &[Removed], end: Nanos) -> Vec<Term> {
    let kills: Vec<(Nanos, u32)> = removals
        .iter()
        .filter(|r| r.kind == Removal::Kill)
        .filter_map(|r| Some((r.at, r.candidate?)))
        .collect();
    let mut open: BTreeMap<u32, (TermId, Nanos)> = BTreeMap::new();
    let mut done = Vec::new();
    let mut kills = kills.into_iter().peekable();
    let mut close = |open: &mut BTreeMap<u32, (TermId, Nanos)>, c: u32, at: Nanos| {
        if let Some((id, start)) = open.remove(&c) {
            done.push(Term {
                id,
                start,
                end: at.max(start),
            });
        }
    };
    for op in history.ops() {
        while let Some(&(t, c)) = kills.peek() {
            if t > op.time {
                break;
            }
            close(&mut open, c, t);
            kills.next();
        }
        let c = op.client.0;
        match (op.f, op.ty) {
            (OpF::Campaign, OpType::Ok) => {
                close(&mut open, c, op.time);
                let id = TermId {
                    candidate: c,
                    epoch: op.token.map_or(0, |t| t.0),
                };
                open.insert(c, (id, op.time));
            }
            (OpF::LeaderLost, _) | (OpF::Resign, OpType::Invoke) => close(&mut open, c, op.time),
            _ => {}
        }
    }
    for (t, c) in kills {
        close(&mut open, c, t);
    }
    let still: Vec<u32> = open.keys().copied().collect();
    for c in still {
        close(&mut open, c, end);
    }
    done.sort_by_key(|t| t.start);
    done
}

fn split_brain(terms: &[Term]) -> Vec<SplitBrain> {
    let mut out = Vec::new();
    for (i, a) in terms.iter().enumerate() {
        for b in &terms[i + 1..] {
            if b.start >= a.end {
                continue;
            }
            if a.id.candidate == b.id.candidate {
                continue;
            }
            let (from, to) = (a.start.max(b.start), a.end.min(b.end));
            if to > from {
                out.push(SplitBrain {
                    at_s: secs(from),
                    ms: ms(to, from),
                    older: a.id,
                    newer: b.id,
                });
            }
        }
    }
    out
}

/// Runs the checker on a failover history.
pub fn check(history: &History) -> FailoverFigures {
    let end = history
        .ops()
        .last()
        .map(|o| o.time)
        .max(history.faults().last().map(|f| f.time))
        .unwrap_or_default();
    let (removals, not_applied) = (removals(history, true), removals(history, false));
    let terms = terms(history, &removals, end);
    let episodes = split_brain(&terms);
    let mut epoch_regressions = 0;
    let mut highest = 0;
    for t in &terms {
        if t.id.epoch < highest {
            epoch_regressions += 1;
        }
        highest = highest.max(t.id.epoch);
    }
    // Candidates and when they first and (if killed) last acted.
    let mut first_seen: BTreeMap<u32, Nanos> = BTreeMap::new();
    for op in history.ops() {
        first_seen.entry(op.client.0).or_insert(op.time);
    }
    let mut killed: BTreeMap<u32, Nanos> = BTreeMap::new();
    for r in &removals {
        if let (Removal::Kill, Some(c)) = (r.kind, r.candidate) {
            killed.insert(c, r.at);
        }
    }

    let rounds_end = rounds_end(history).unwrap_or(Nanos(u64::MAX));
    let mut rounds = Vec::new();
    for (i, r) in removals.iter().enumerate() {
        let next = removals.get(i + 1).map_or(rounds_end, |n| n.at);
        let old = terms
            .iter()
            .filter(|t| t.start <= r.at && t.end >= r.at)
            .filter(|t| r.candidate.is_none_or(|c| c == t.id.candidate))
            .max_by_key(|t| t.start)
            .map(|t| t.id);
        let begun: Vec<&Term> = terms
            .iter()
            .filter(|t| t.start > r.at && t.start < next)
            .collect();
        let new = begun.iter().find(|t| Some(t.id) != old).map(|t| **t);
        let old_open_at_end = old.is_some_and(|o| {
            terms
                .iter()
                .any(|t| t.id == o && t.end >= next.min(end) && t.start <= r.at)
        });
        let time_to_new = new.map(|t| ms(t.start, r.at));
        let observed = new.and_then(|n| {
            let must: BTreeSet<u32> = first_seen
                .iter()
                .filter(|&(_, &first)| first <= r.at)
                .map(|(&c, _)| c)
                .filter(|c| killed.get(c).is_none_or(|&k| k > n.start))
                .filter(|&c| {
                    let removed = match r.kind {
                        Removal::Kill | Removal::Pause | Removal::Partition => true,
                        Removal::Resign | Removal::ServerKill => false,
                    };
                    !(removed && r.candidate == Some(c))
                })
                .collect();
            let mut last = n.start;
            for c in must {
                let seen = history
                    .ops()
                    .iter()
                    .filter(|o| o.client.0 == c && o.time >= r.at && o.time < next)
                    .find(|o| {
                        let own = o.f == OpF::Campaign
                            && o.ty == OpType::Ok
                            && c == n.id.candidate
                            && o.token.map(|t| t.0) == Some(n.id.epoch);
                        let observe = o.f == OpF::Observe
                            && o.ty == OpType::Ok
                            && o.key.0 == n.id.candidate
                            && o.token.map(|t| t.0) == Some(n.id.epoch);
                        own || observe
                    })?;
                last = last.max(seen.time);
            }
            Some(ms(last, r.at))
        });
        let split = episodes
            .iter()
            .filter(|e| e.at_s >= secs(r.at) && e.at_s < secs(next))
            .fold(0.0, |sum, e| sum + e.ms);
        rounds.push(Failure {
            removal: r.kind,
            at_s: secs(r.at),
            targets: r.targets.to_vec(),
            old_leader: old,
            new_leader: new.map(|t| t.id),
            time_to_new_leader_ms: time_to_new,
            time_to_all_observed_ms: observed,
            elections: begun.len() as u64,
            split_brain_ms: split,
            leader_kept: new.is_none() && old_open_at_end,
        });
    }

    let mut by_removal = BTreeMap::new();
    // By name, the order results list them in.
    let kinds: BTreeMap<&str, Removal> = rounds
        .iter()
        .map(|f| f.removal)
        .chain(not_applied.iter().map(|r| r.kind))
        .map(|k| (k.name(), k))
        .collect();
    for (name, kind) in kinds {
        let of_kind: Vec<&Failure> = rounds.iter().filter(|f| f.removal == kind).collect();
        let mut summary = summarize(&of_kind);
        summary.not_applied = not_applied.iter().filter(|r| r.kind == kind).count() as u64;
        by_removal.insert(name.to_string(), summary);
    }
    let mut overall = summarize(&rounds.iter().collect::<Vec<_>>());
    overall.not_applied = not_applied.len() as u64;
    FailoverFigures {
        overall,
        by_removal,
        split_brain: episodes,
        epoch_regressions,
        rounds,
    }
}

fn summarize(rounds: &[&Failure]) -> Summary {
    let times = |f: fn(&Failure) -> Option<f64>| -> Vec<f64> {
        rounds.iter().filter_map(|r| f(r)).collect()
    };
    let n = rounds.len() as u64;
    Summary {
        failures: n,
        no_new_leader: rounds.iter().filter(|r| r.new_leader.is_none()).count() as u64,
        leader_kept: rounds.iter().filter(|r| r.leader_kept).count() as u64,
        not_all_observed: rounds
            .iter()
            .filter(|r| r.new_leader.is_some() && r.time_to_all_observed_ms.is_none())
            .count() as u64,
        elections_per_failure: (n > 0)
            .then(|| rounds.iter().map(|r| r.elections).sum::<u64>() as f64 / n as f64),
        time_to_new_leader_ms: MsStats::of(&times(|r| r.time_to_new_leader_ms)),
        time_to_all_observed_ms: MsStats::of(&times(|r| r.time_to_all_observed_ms)),
        split_brain_ms: MsStats::of(&times(|r| Some(r.split_brain_ms))),
        split_brain_failures: rounds.iter().filter(|r| r.split_brain_ms > 0.0).count() as u64,
        not_applied: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, ErrorKind, FaultEvent, FencingToken, KeyId, Op, OpF, OpType};

    const MS: u64 = 1_000_000;

    fn near(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    fn op(t_ms: u64, client: u32, f: OpF, ty: OpType, leader: Option<(u32, u64)>) -> Op {
        let mut op = Op::complete(
            Nanos(t_ms * MS),
            ClientId(client),
            f,
            KeyId(leader.map_or(0, |l| l.0)),
            ty,
            leader.map(|l| FencingToken(l.1)),
            None,
        );
        if f == OpF::LeaderLost {
            op.error = Some(ErrorKind::SessionExpired);
        }
        op
    }

    fn removal(t_ms: u64, fault: FaultKind, target: &str) -> FaultEvent {
        FaultEvent {
            time: Nanos(t_ms * MS),
            fault,
            phase: FaultPhase::Start,
            targets: vec![target.into()],
            note: String::new(),
            applied: true,
        }
    }

    /// c1 leads (epoch 10) and is paused at 1000 ms; c2 is elected at 3000 ms (epoch 11) and
    /// every live candidate sees it by 3050 ms; c1 wakes and learns its term ended only at
    /// 4500 ms: 1500 ms of split brain with epochs 10 and 11. Then c2 resigns at 6000 ms, c3
    /// leads at 6020 ms (epoch 12), and everyone sees it by 6026 ms, with no overlap.
    #[test]
    fn split_brain_after_a_pause_is_the_overlap_of_the_two_terms() {
        use OpF::*;
        use OpType::*;
        let ops = vec![
            op(0, 1, Campaign, Invoke, None),
            op(0, 2, Campaign, Invoke, None),
            op(0, 3, Campaign, Invoke, None),
            op(100, 1, Campaign, Ok, Some((1, 10))),
            op(101, 1, Observe, Ok, Some((1, 10))),
            op(102, 2, Observe, Ok, Some((1, 10))),
            op(103, 3, Observe, Ok, Some((1, 10))),
            op(2990, 2, Observe, Ok, None),
            op(3000, 2, Campaign, Ok, Some((2, 11))),
            op(3040, 2, Observe, Ok, Some((2, 11))),
            op(3050, 3, Observe, Ok, Some((2, 11))),
            op(4500, 1, LeaderLost, Ok, Some((1, 10))),
            op(4510, 1, Observe, Ok, Some((2, 11))),
            op(6005, 2, Resign, Invoke, Some((2, 11))),
            op(6010, 2, Resign, Ok, Some((2, 11))),
            op(6020, 3, Campaign, Ok, Some((3, 12))),
            op(6025, 1, Observe, Ok, Some((3, 12))),
            op(6026, 2, Observe, Ok, Some((3, 12))),
            op(6030, 3, Observe, Ok, Some((3, 12))),
            // Teardown: c3 gives up, c1 is elected once more: not part of any round.
            op(7010, 3, Resign, Invoke, Some((3, 12))),
            op(7050, 1, Campaign, Ok, Some((1, 13))),
        ];
        let faults = vec![
            removal(1000, FaultKind::Pause, "c1"),
            removal(6000, FaultKind::Resign, "c2"),
            removal(7000, FaultKind::End, "candidates"),
        ];
        let f = check(&History::with_faults(ops, faults));

        assert_eq!(f.split_brain.len(), 1, "{:?}", f.split_brain);
        let sb = &f.split_brain[0];
        assert_eq!(
            sb.older,
            TermId {
                candidate: 1,
                epoch: 10
            }
        );
        assert_eq!(
            sb.newer,
            TermId {
                candidate: 2,
                epoch: 11
            }
        );
        assert!((sb.ms - 1500.0).abs() < 1e-6, "{}", sb.ms);
        assert!((sb.at_s - 3.0).abs() < 1e-9);

        let pause = &f.rounds[0];
        assert_eq!(pause.removal, Removal::Pause);
        assert_eq!(
            pause.old_leader,
            Some(TermId {
                candidate: 1,
                epoch: 10
            })
        );
        assert_eq!(
            pause.new_leader,
            Some(TermId {
                candidate: 2,
                epoch: 11
            })
        );
        assert!(near(pause.time_to_new_leader_ms, 2000.0));
        // The paused c1 is not waited for; c3 saw c2 last, at 3050 ms.
        assert!(near(pause.time_to_all_observed_ms, 2050.0));
        assert_eq!(pause.elections, 1);
        assert!((pause.split_brain_ms - 1500.0).abs() < 1e-6);

        let resign = &f.rounds[1];
        assert_eq!(
            resign.new_leader,
            Some(TermId {
                candidate: 3,
                epoch: 12
            })
        );
        assert!(near(resign.time_to_new_leader_ms, 20.0));
        // c3 leads from 6020 ms (its own grant); c1 and c2 see it at 6025 and 6026 ms.
        assert!(near(resign.time_to_all_observed_ms, 26.0));
        assert_eq!(resign.split_brain_ms, 0.0);

        assert_eq!(f.overall.failures, 2);
        assert_eq!(f.overall.split_brain_failures, 1);
        assert_eq!(f.overall.elections_per_failure, Some(1.0));
        let pause_sb = f.by_removal["pause"].split_brain_ms.as_ref().unwrap().max;
        assert!(near(Some(pause_sb), 1500.0));
        let resign_p50 = f.by_removal["resign"]
            .time_to_new_leader_ms
            .as_ref()
            .unwrap()
            .p50;
        assert!(near(Some(resign_p50), 20.0));
        assert_eq!(f.epoch_regressions, 0);
    }

    /// A killed leader's term ends at the kill; a server kill the leader survives counts as
    /// `leader_kept`; an epoch that goes back is counted.
    #[test]
    fn kills_end_terms_and_a_surviving_leader_is_kept() {
        use OpF::*;
        use OpType::*;
        let ops = vec![
            op(10, 1, Campaign, Ok, Some((1, 5))),
            op(20, 2, Observe, Ok, Some((1, 5))),
            op(4000, 2, Campaign, Ok, Some((2, 3))),
            op(4100, 2, Observe, Ok, Some((2, 3))),
            op(9000, 2, Observe, Ok, Some((2, 3))),
        ];
        let mut impossible = removal(8000, FaultKind::Partition, "c2");
        impossible.applied = false;
        let faults = vec![
            removal(1000, FaultKind::Kill, "c1"),
            removal(6000, FaultKind::Kill, "zk2"),
            impossible,
        ];
        let f = check(&History::with_faults(ops, faults));
        assert!(f.split_brain.is_empty(), "{:?}", f.split_brain);
        assert!(near(f.rounds[0].time_to_new_leader_ms, 3000.0));
        // The only live candidate is the new leader itself: it knows from its grant.
        assert!(near(f.rounds[0].time_to_all_observed_ms, 3000.0));
        assert_eq!(f.rounds[1].removal, Removal::ServerKill);
        assert!(f.rounds[1].leader_kept);
        assert_eq!(f.rounds[1].elections, 0);
        assert_eq!(f.overall.no_new_leader, 1);
        assert_eq!(f.overall.failures, 2);
        assert_eq!(f.overall.not_applied, 1);
        assert_eq!(f.by_removal["partition"].not_applied, 1);
        assert_eq!(f.by_removal["partition"].failures, 0);
        assert_eq!(f.epoch_regressions, 1);
    }
}
