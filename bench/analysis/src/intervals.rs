//! Judging a history whose times are intervals: workers on their own clocks.
//!
//! A worker on another host stamps its ops with its own clock; the coordinator maps each time
//! onto the run's clock with an uncertainty (`lockbench_workloads::clock`: half a probe round
//! trip plus a drift allowance), so an op of slot `s` happened somewhere in
//! `time ± bounds[s]`. Writes are exact: the fenced resource is one service on the
//! coordinator's clock and stamps them itself. A checker that compared these times as points
//! could invent a violation (a holder on a clock 200 ms behind seems to hold long after it
//! released) or hide one. So each finding is judged over every point of its intervals:
//!
//! - an **overlap** of two clients' holds of one key (from the acquire's `ok` to the release's
//!   invoke, or the end of the history) is *certain* when the latest possible start of each
//!   is before the earliest possible end of the other, *ambiguous* when they overlap for some
//!   choice of points but not all, and not counted otherwise;
//! - a **write after the lock was lost** (`crate::lost`'s rule: another client was granted
//!   the key after the writer's own grant and before its write) is *certain* when another's
//!   grant lies after the writer's grant and before the write at every point, *ambiguous*
//!   when only at some. The writer's grant is the one the write names (`Op::grant`, the
//!   writer's count of its grants): by times alone a write just before a re-grant whose
//!   mapped time is uncertain could be either grant's. Only a write that names none (an older
//!   history) is paired by times: with its client's latest grant that may precede it;
//! - a **stale write** is judged by the resource from the tokens it has seen, in its own
//!   order, on its own clock: certain whatever the workers' clocks (none is ambiguous);
//! - a **lost-while-held episode** (server-side truth) by [`crate::truth_intervals`], which
//!   [`judge_history`] adds when the history has server observations.
//!
//! Overlaps are counted as pairs of holds here (the mutex checker counts episodes), so a
//! skewed run and a local one compare by the same rule. Only certain findings are violations;
//! ambiguous ones are reported with the bound that made them so.

use lockbench_core::{ClientId, History, KeyId, Nanos, Op, OpF, OpType};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Per client slot (`client % clients`), the largest uncertainty (half-width, ns) of its ops'
/// times; a slot missing from it is on the coordinator's clock (exact).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockBounds {
    /// The workload's client slots (replacement clients map onto `id % clients`).
    pub clients: u32,
    /// Slot to half-width, ns.
    pub slots: BTreeMap<u32, u64>,
}

impl ClockBounds {
    /// How far `op`'s time may be from when it happened, ns.
    pub(crate) fn of(&self, op: &Op) -> u64 {
        if op.f == OpF::Write || self.clients == 0 {
            return 0;
        }
        self.slots
            .get(&(op.client.0 % self.clients))
            .copied()
            .unwrap_or(0)
    }

    /// The largest of them.
    pub fn max(&self) -> u64 {
        self.slots.values().copied().max().unwrap_or(0)
    }
}

/// What judging over intervals found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalJudgement {
    /// The largest uncertainty of any op's time, ns (0: every op on the coordinator's clock).
    pub bound_ns: u64,
    /// Pairs of holds of one key by two clients that overlap at every point of their intervals.
    pub overlaps_certain: u64,
    /// Pairs that overlap at some points of their intervals but not all.
    pub overlaps_ambiguous: u64,
    /// Writes certainly made after another client's later grant.
    pub lost_writes_certain: u64,
    /// Writes that may have been.
    pub lost_writes_ambiguous: u64,
    /// Writes the resource found stale (certain: one service, one clock).
    pub stale_writes_certain: u64,
    /// Lost-while-held episodes ([`crate::truth_intervals`]) that happened at every point of
    /// the intervals; absent when the servers were not observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_while_held_certain: Option<u64>,
    /// Episodes that happened at some points only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_while_held_ambiguous: Option<u64>,
}

/// A time known to lie in `lo ..= hi`.
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: i128,
    hi: i128,
}

impl Span {
    fn of(t: Nanos, u: u64) -> Span {
        let t = t.0 as i128;
        Span {
            lo: t - u as i128,
            hi: t + u as i128,
        }
    }
}

/// One client's hold of one key.
#[derive(Clone, Copy, Debug)]
struct Hold {
    client: ClientId,
    from: Span,
    to: Span,
}

/// Judges a run's `history` over the intervals `bounds` gives its ops' times: every finding
/// this module judges, for results' `clocks` section.
pub fn judge_history(history: &History, bounds: &ClockBounds) -> IntervalJudgement {
    let mut out = judge(history.ops(), bounds);
    if let Some((certain, ambiguous)) = crate::truth_intervals::judge(history, bounds) {
        out.lost_while_held_certain = Some(certain);
        out.lost_while_held_ambiguous = Some(ambiguous);
    }
    out
}

/// Judges `ops` (time-ordered) over the intervals `bounds` gives their times.
pub fn judge(ops: &[Op], bounds: &ClockBounds) -> IntervalJudgement {
    let mut out = IntervalJudgement {
        bound_ns: bounds.max(),
        ..IntervalJudgement::default()
    };
    let end = ops.last().map_or(Nanos(0), |o| o.time);
    let mut open: HashMap<(ClientId, KeyId), Span> = HashMap::new();
    let mut holds: HashMap<KeyId, Vec<Hold>> = HashMap::new();
    // Per key, every grant: who, and when.
    let mut grants: HashMap<KeyId, Vec<(ClientId, Span)>> = HashMap::new();
    // Per client, its grants in its own order (what a write's `grant` counts).
    let mut by_client: HashMap<ClientId, Vec<(KeyId, Span)>> = HashMap::new();
    // Judged once every grant is known: the writer's own grant may sort after its write (its
    // mapped time is a midpoint, off by up to the bound), and must still count as its own.
    let mut writes: Vec<(&Op, Span)> = Vec::new();
    for op in ops {
        let at = Span::of(op.time, bounds.of(op));
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                open.insert((op.client, op.key), at);
                grants.entry(op.key).or_default().push((op.client, at));
                by_client.entry(op.client).or_default().push((op.key, at));
            }
            (OpF::Release, OpType::Invoke) => {
                if let Some(from) = open.remove(&(op.client, op.key)) {
                    holds.entry(op.key).or_default().push(Hold {
                        client: op.client,
                        from,
                        to: at,
                    });
                }
            }
            (OpF::Write, OpType::Ok | OpType::Fail) => {
                if op.stale == Some(true) {
                    out.stale_writes_certain += 1;
                }
                writes.push((op, at));
            }
            _ => {}
        }
    }
    for (op, at) in writes {
        let named = op
            .grant
            .and_then(|k| by_client.get(&op.client)?.get((k as usize).checked_sub(1)?))
            .filter(|(key, _)| *key == op.key)
            .map(|(_, g)| *g);
        let (certain, possible) = lost_write(op, at, named, grants.get(&op.key));
        out.lost_writes_certain += u64::from(certain);
        out.lost_writes_ambiguous += u64::from(possible && !certain);
    }
    for ((client, key), from) in open {
        let u = bounds
            .slots
            .get(&(client.0 % bounds.clients.max(1)))
            .copied()
            .unwrap_or(0);
        holds.entry(key).or_default().push(Hold {
            client,
            from,
            to: Span::of(end, u),
        });
    }
    for list in holds.values_mut() {
        let (certain, ambiguous) = overlaps(list);
        out.overlaps_certain += certain;
        out.overlaps_ambiguous += ambiguous;
    }
    out
}

/// Pairs of `holds` (one key) by different clients overlapping at every point, and at some
/// points only.
fn overlaps(holds: &mut [Hold]) -> (u64, u64) {
    holds.sort_by_key(|h| h.from.lo);
    let (mut certain, mut ambiguous) = (0, 0);
    for (i, a) in holds.iter().enumerate() {
        // Sorted by earliest start: once b's earliest start is past a's latest end, no later
        // hold can overlap a.
        for b in holds[i + 1..].iter().take_while(|b| b.from.lo < a.to.hi) {
            if a.client == b.client {
                continue;
            }
            let possible = a.from.lo < b.to.hi && b.from.lo < a.to.hi;
            let sure = a.from.hi < b.to.lo && b.from.hi < a.to.lo;
            if sure {
                certain += 1;
            } else if possible {
                ambiguous += 1;
            }
        }
    }
    (certain, ambiguous)
}

/// Whether write `op` at `at` (exact) certainly, and possibly, came after another client's
/// grant that followed the writer's own grant: `named`, the one the write names, else its
/// latest that may precede the write (`grants`: the key's grants).
fn lost_write(
    op: &Op,
    at: Span,
    named: Option<Span>,
    grants: Option<&Vec<(ClientId, Span)>>,
) -> (bool, bool) {
    let Some(grants) = grants else {
        return (false, false);
    };
    let latest = || {
        grants
            .iter()
            .rev()
            .find(|(c, g)| *c == op.client && g.lo <= at.hi)
            .map(|(_, g)| *g)
    };
    let Some(own) = named.or_else(latest) else {
        return (false, false);
    };
    let (mut certain, mut possible) = (false, false);
    for (_, g) in grants.iter().filter(|(c, _)| *c != op.client) {
        if g.lo > own.hi && g.hi < at.lo {
            certain = true;
        }
        if g.hi > own.lo && g.lo < at.hi {
            possible = true;
        }
    }
    (certain, possible)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(ms: u64, client: u32, ty: OpType, f: OpF) -> Op {
        Op {
            time: Nanos(ms * 1_000_000),
            client: ClientId(client),
            ty,
            f,
            key: KeyId(0),
            token: None,
            error: None,
            stale: None,
            grant: None,
        }
    }

    fn hold(from: u64, to: u64, client: u32) -> [Op; 2] {
        [
            op(from, client, OpType::Ok, OpF::Acquire),
            op(to, client, OpType::Invoke, OpF::Release),
        ]
    }

    fn history(holds: &[[Op; 2]]) -> Vec<Op> {
        let mut ops: Vec<Op> = holds.iter().flatten().cloned().collect();
        ops.sort_by_key(|o| o.time);
        ops
    }

    fn bounds(ms: &[(u32, u64)]) -> ClockBounds {
        ClockBounds {
            clients: 2,
            slots: ms.iter().map(|&(s, m)| (s, m * 1_000_000)).collect(),
        }
    }

    /// Client 1's hold [100, 200] ms and client 0's [195, 300]: a 5 ms overlap as points. With
    /// client 1 known to ±10 ms it may not have happened (ambiguous); exact clocks make it
    /// certain; a gap of 50 ms is nothing at ±10 ms.
    #[test]
    fn an_overlap_is_certain_only_when_it_holds_at_every_point() {
        let close = history(&[hold(100, 200, 1), hold(195, 300, 0)]);
        let exact = judge(&close, &ClockBounds::default());
        assert_eq!((exact.overlaps_certain, exact.overlaps_ambiguous), (1, 0));
        let skewed = judge(&close, &bounds(&[(1, 10)]));
        assert_eq!((skewed.overlaps_certain, skewed.overlaps_ambiguous), (0, 1));
        assert_eq!(skewed.bound_ns, 10_000_000);

        let apart = history(&[hold(100, 200, 1), hold(250, 300, 0)]);
        let j = judge(&apart, &bounds(&[(0, 10), (1, 10)]));
        assert_eq!((j.overlaps_certain, j.overlaps_ambiguous), (0, 0));

        let deep = history(&[hold(100, 300, 1), hold(150, 400, 0)]);
        let j = judge(&deep, &bounds(&[(0, 10), (1, 10)]));
        assert_eq!((j.overlaps_certain, j.overlaps_ambiguous), (1, 0));
    }

    /// A write (exact, the resource's clock) 5 ms after another client's grant is a certain
    /// lost write on exact clocks, ambiguous when that grant is known to ±10 ms.
    #[test]
    fn a_lost_write_is_certain_only_when_the_other_grant_surely_came_between() {
        let mut ops = vec![
            op(100, 1, OpType::Ok, OpF::Acquire),
            op(200, 0, OpType::Ok, OpF::Acquire),
            op(205, 1, OpType::Ok, OpF::Write),
        ];
        ops[2].stale = Some(true);
        let exact = judge(&ops, &ClockBounds::default());
        assert_eq!(
            (exact.lost_writes_certain, exact.lost_writes_ambiguous),
            (1, 0)
        );
        assert_eq!(exact.stale_writes_certain, 1);
        let skewed = judge(&ops, &bounds(&[(0, 10)]));
        assert_eq!(
            (skewed.lost_writes_certain, skewed.lost_writes_ambiguous),
            (0, 1)
        );
        assert_eq!(
            skewed.stale_writes_certain, 1,
            "the resource's verdict stands"
        );
    }

    /// Client 1 granted at 100 ms and at 300 ms (known to ±10 ms, its second grant's midpoint
    /// mapped 2 ms after its write at 298 ms), client 0 granted at 200 ms in between: the write
    /// belongs to the second grant, which may precede it, so it is no lost write, certain or
    /// ambiguous. Taking the history in order alone would pair it with the first grant and
    /// call it certain.
    #[test]
    fn a_write_before_its_own_grant_s_mapped_midpoint_is_still_that_grant_s() {
        let ops = vec![
            op(100, 1, OpType::Ok, OpF::Acquire),
            op(150, 1, OpType::Invoke, OpF::Release),
            op(200, 0, OpType::Ok, OpF::Acquire),
            op(250, 0, OpType::Invoke, OpF::Release),
            op(298, 1, OpType::Ok, OpF::Write),
            op(300, 1, OpType::Ok, OpF::Acquire),
        ];
        let j = judge(&ops, &bounds(&[(1, 10)]));
        assert_eq!((j.lost_writes_certain, j.lost_writes_ambiguous), (0, 0));
        // Named as the second grant's, the same.
        let mut named = ops.clone();
        named[4].grant = Some(2);
        let j = judge(&named, &bounds(&[(1, 10)]));
        assert_eq!((j.lost_writes_certain, j.lost_writes_ambiguous), (0, 0));
    }

    /// Kleppmann's pause on a Swarm task (the history of a `run fencing --workers swarm:1`,
    /// Redlock): the holder, client 0, on a clock known to ±100 ms, granted at 100 ms, paused
    /// 2 s; its lease expired and client 1 (exact) was granted at 1109 ms; the holder's write
    /// at 2101 ms, its release, and its next grant at 2126 ms, 25 ms after the write, within
    /// the bound. By times alone the write could be the second grant's, and no lost write is
    /// seen; the write names its grant, the first, and client 1's grant surely lies between.
    #[test]
    fn a_write_is_paired_with_the_grant_it_names_not_the_nearest_in_time() {
        let mut write = op(2101, 0, OpType::Ok, OpF::Write);
        write.grant = Some(1);
        let ops = vec![
            op(100, 0, OpType::Ok, OpF::Acquire),
            op(1109, 1, OpType::Ok, OpF::Acquire),
            op(1200, 1, OpType::Invoke, OpF::Release),
            write,
            op(2103, 0, OpType::Invoke, OpF::Release),
            op(2126, 0, OpType::Ok, OpF::Acquire),
        ];
        let j = judge(&ops, &bounds(&[(0, 100)]));
        assert_eq!((j.lost_writes_certain, j.lost_writes_ambiguous), (1, 0));
        // Unnamed (an older history), it is paired with the nearest grant that may precede it.
        let mut unnamed = ops.clone();
        unnamed[3].grant = None;
        let j = judge(&unnamed, &bounds(&[(0, 100)]));
        assert_eq!((j.lost_writes_certain, j.lost_writes_ambiguous), (0, 0));
        // A name that matches no grant of the writer's on that key falls back the same way.
        let mut wrong = ops.clone();
        wrong[3].grant = Some(7);
        let j = judge(&wrong, &bounds(&[(0, 100)]));
        assert_eq!((j.lost_writes_certain, j.lost_writes_ambiguous), (0, 0));
    }
}
