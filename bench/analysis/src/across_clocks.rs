//! Point findings across clocks: with workers on their own clocks, an op's time on the run
//! clock is known only within a bound, so the point checkers' findings that rest on the order
//! of two clients' ops stand only as far as the interval judgement
//! ([`crate::intervals`]) makes them certain.
//!
//! [`Certain`] counts what the interval rules prove beyond the overlaps and lost writes
//! `intervals` judges itself (reused tokens, releases and renewals of another client's lock,
//! lost writes the resource accepted); [`reconcile`] sets aside what is not certain in a
//! run's [`SafetyResult`], says so in notes, and recomputes its verdict.

use crate::checker::Validity;
use crate::intervals::{ClockBounds, IntervalJudgement, judge};
use crate::verdict::SafetyResult;
use lockbench_core::{FindingKind, Op, OpF, OpType};

/// What the interval rules prove beyond [`IntervalJudgement`]'s overlaps and lost writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Certain {
    /// Grants whose token was certainly not above one granted before it on the same key.
    pub token_reuses: u64,
    /// Releases that certainly acted on another client's lock.
    pub foreign_releases: u64,
    /// Renewals that certainly acted on another client's lock.
    pub foreign_renews: u64,
    /// Of the certain lost writes, those the resource accepted.
    pub lost_accepted: u64,
}

impl Certain {
    /// The certain findings of `ops` (in time order) with clocks within `bounds`.
    pub fn of(ops: &[Op], bounds: &ClockBounds) -> Certain {
        let (foreign_releases, foreign_renews) = certain_foreign(ops, bounds);
        // The judgement counts lost writes whatever the resource did; without the writes it
        // rejected, the certain ones left are those it accepted (the damage).
        let accepted: Vec<Op> = ops
            .iter()
            .filter(|o| !(o.f == OpF::Write && o.ty == OpType::Fail))
            .cloned()
            .collect();
        Certain {
            token_reuses: certain_token_reuses(ops, bounds),
            foreign_releases,
            foreign_renews,
            lost_accepted: judge(&accepted, bounds).lost_writes_certain,
        }
    }
}

/// The release checker's rule over intervals: a release (renewal) that completed `ok` acted on
/// another client's lock for certain when another client's grant of the key lies, at every
/// point of the intervals, after the releaser's own latest grant and before it invoked the
/// release (renewal). Returns (releases, renewals). `ops` in time order; judged once every
/// grant is known, as `intervals::judge` judges writes.
fn certain_foreign(ops: &[Op], bounds: &ClockBounds) -> (u64, u64) {
    use lockbench_core::{ClientId, KeyId};
    let span = |op: &Op| {
        let b = bounds
            .slots
            .get(&(op.client.0 % bounds.clients.max(1)))
            .copied()
            .unwrap_or(0) as i128;
        (op.time.0 as i128 - b, op.time.0 as i128 + b)
    };
    type Span = (i128, i128);
    let mut grants: std::collections::HashMap<KeyId, Vec<(ClientId, Span)>> = Default::default();
    let mut invoked: std::collections::HashMap<(ClientId, KeyId, bool), Span> = Default::default();
    let mut done: Vec<(ClientId, KeyId, bool, Span)> = Vec::new();
    for op in ops {
        let renew = op.f == OpF::Renew;
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => grants
                .entry(op.key)
                .or_default()
                .push((op.client, span(op))),
            (OpF::Release | OpF::Renew, OpType::Invoke) => {
                invoked.insert((op.client, op.key, renew), span(op));
            }
            (OpF::Release | OpF::Renew, OpType::Ok) => {
                if let Some(at) = invoked.remove(&(op.client, op.key, renew)) {
                    done.push((op.client, op.key, renew, at));
                }
            }
            _ => {}
        }
    }
    let (mut releases, mut renews) = (0, 0);
    for (client, key, renew, at) in done {
        let Some(list) = grants.get(&key) else {
            continue;
        };
        let Some(own) = list
            .iter()
            .rev()
            .find(|(c, g)| *c == client && g.0 <= at.1)
            .map(|(_, g)| *g)
        else {
            continue;
        };
        let foreign = list
            .iter()
            .any(|(c, g)| *c != client && g.0 > own.1 && g.1 < at.0);
        if foreign && renew {
            renews += 1;
        } else if foreign {
            releases += 1;
        }
    }
    (releases, renews)
}

/// The fencing checker's token rule over intervals: a grant reuses a token when its token is
/// not above one granted on the same key certainly before it (that grant's latest possible
/// time is before this one's earliest), or equals any other grant's. `ops` in time order.
fn certain_token_reuses(ops: &[Op], bounds: &ClockBounds) -> u64 {
    let bound_of = |op: &Op| {
        bounds
            .slots
            .get(&(op.client.0 % bounds.clients.max(1)))
            .copied()
            .unwrap_or(0) as i128
    };
    // Per key: the recent grants (token, midpoint, latest time), the highest token of those
    // certainly before every later grant, and every token seen.
    #[derive(Default)]
    struct Key {
        recent: std::collections::VecDeque<(u64, i128, i128)>,
        before: Option<u64>,
        seen: std::collections::HashSet<u64>,
    }
    // Sorted by midpoint, a grant whose midpoint is more than two largest bounds back is
    // certainly before this one and every later one.
    let horizon = 2 * bounds.max() as i128;
    let mut keys: std::collections::HashMap<lockbench_core::KeyId, Key> = Default::default();
    let mut reuses = 0;
    for op in ops {
        let (OpF::Acquire, OpType::Ok, Some(token)) = (op.f, op.ty, op.token) else {
            continue;
        };
        let (t, b) = (op.time.0 as i128, bound_of(op));
        let k = keys.entry(op.key).or_default();
        while let Some(&(tok, mid, _)) = k.recent.front() {
            if mid >= t - horizon {
                break;
            }
            k.before = Some(k.before.map_or(tok, |m| m.max(tok)));
            k.recent.pop_front();
        }
        let certain_before = k
            .recent
            .iter()
            .filter(|(_, _, hi)| *hi < t - b)
            .map(|(tok, _, _)| *tok)
            .chain(k.before)
            .max();
        if !k.seen.insert(token.0) || certain_before.is_some_and(|m| m >= token.0) {
            reuses += 1;
        }
        k.recent.push_back((token.0, t, t + b));
    }
    reuses
}

/// Across clocks, the point checkers' findings that rest on the order of two clients' ops
/// (overlaps, writes after the lock was lost, reused tokens, releases and renewals of another
/// client's lock) are only as good as the mapped times, which may be off by the bound either
/// way: a correct hand-off closer than that reads as an overlap. The interval judgement
/// decides instead: an overlap or a lost write stands only when some is certain, and reused
/// tokens and foreign releases and renewals count only the certain ones. What was set aside
/// is said in the returned notes, never dropped silently; the verdict is then recomputed from
/// what stands.
pub fn reconcile(
    safety: &mut SafetyResult,
    j: &IntervalJudgement,
    certain: &Certain,
) -> Vec<String> {
    let bound = j.bound_ns as f64 / 1e6;
    let mut notes = Vec::new();
    let mut set_aside = |kinds: &[FindingKind], what: String, safety: &mut SafetyResult| {
        for k in kinds {
            safety.violation_kinds.remove(k.name());
            safety.outside_fault_windows.remove(k.name());
        }
        notes.push(what);
    };
    if j.overlaps_certain == 0 && safety.mutex_violations > 0 {
        let what = format!(
            "{} overlap(s) on mapped times (longest {:.3} ms) set aside: none certain over the \
             workers' clock intervals (bound {bound:.3} ms; {} ambiguous pairs)",
            safety.mutex_violations, safety.max_overlap_ms, j.overlaps_ambiguous
        );
        safety.mutex_violations = 0;
        safety.overlapping_grants = 0;
        safety.overlap_ms = 0.0;
        safety.max_overlap_ms = 0.0;
        set_aside(&[FindingKind::Mutex], what, safety);
    }
    let (lost, accepted) = (j.lost_writes_certain, certain.lost_accepted);
    if lost < safety.writes_after_lock_lost || accepted < safety.writes_after_lock_lost_accepted {
        let what = format!(
            "{} write(s) after the lock was lost on mapped times ({} accepted), of which {lost} \
             ({accepted} accepted) certain over the intervals ({} ambiguous): the rest set aside",
            safety.writes_after_lock_lost,
            safety.writes_after_lock_lost_accepted,
            j.lost_writes_ambiguous
        );
        safety.writes_after_lock_lost = lost.min(safety.writes_after_lock_lost);
        safety.writes_after_lock_lost_accepted =
            accepted.min(safety.writes_after_lock_lost_accepted);
        let rejected = safety.writes_after_lock_lost - safety.writes_after_lock_lost_accepted;
        let mut gone = Vec::new();
        for (kind, n) in [
            (
                FindingKind::WriteAfterLockLostAccepted,
                safety.writes_after_lock_lost_accepted,
            ),
            (FindingKind::WriteAfterLockLostRejected, rejected),
        ] {
            if n == 0 {
                gone.push(kind);
            } else if let Some(v) = safety.violation_kinds.get_mut(kind.name()) {
                *v = (*v).min(n);
            }
            if let Some(o) = safety.outside_fault_windows.get_mut(kind.name()) {
                *o = (*o).min(n);
            }
        }
        set_aside(&gone, what, safety);
    }
    let reuses = certain.token_reuses;
    if reuses < safety.token_reuses {
        let what = format!(
            "{} reused token(s) on mapped times, of which {reuses} certain over the intervals \
             (bound {bound:.3} ms): the rest set aside",
            safety.token_reuses
        );
        safety.token_reuses = reuses;
        if reuses == 0 {
            set_aside(&[FindingKind::TokenReuse], what, safety);
        } else {
            let kind = FindingKind::TokenReuse.name();
            safety.violation_kinds.insert(kind.into(), reuses);
            if let Some(o) = safety.outside_fault_windows.get_mut(kind) {
                *o = (*o).min(reuses);
            }
            set_aside(&[], what, safety);
        }
    }
    let (releases, renews) = (certain.foreign_releases, certain.foreign_renews);
    if (releases, renews) < (safety.foreign_releases, safety.foreign_renews)
        && (safety.foreign_releases > 0 || safety.foreign_renews > 0)
    {
        let what = format!(
            "{} release(s) and {} renewal(s) of another client's lock on mapped times, of \
             which {releases} and {renews} certain over the intervals: the rest set aside",
            safety.foreign_releases, safety.foreign_renews
        );
        safety.foreign_releases = releases.min(safety.foreign_releases);
        safety.foreign_renews = renews.min(safety.foreign_renews);
        let mut kinds = Vec::new();
        if safety.foreign_releases == 0 {
            kinds.push(FindingKind::ForeignRelease);
        }
        if safety.foreign_renews == 0 {
            kinds.push(FindingKind::ForeignRenew);
        }
        if safety.foreign_releases == 0
            && safety.foreign_renews == 0
            && let Some(r) = safety.checks.get_mut(crate::release::NAME)
        {
            r.validity = Validity::Valid;
            r.note = Some("none certain across clocks (see clocks.judgement)".into());
        }
        set_aside(&kinds, what, safety);
        for (kind, n) in [
            (FindingKind::ForeignRelease, safety.foreign_releases),
            (FindingKind::ForeignRenew, safety.foreign_renews),
        ] {
            if n > 0 {
                safety.violation_kinds.insert(kind.name().into(), n);
                if let Some(o) = safety.outside_fault_windows.get_mut(kind.name()) {
                    *o = (*o).min(n);
                }
            }
        }
    }
    if notes.is_empty() {
        return notes;
    }
    let unknown = !safety.failed_checkers.is_empty() || safety.instrument_faults > 0;
    let invalid = !safety.violation_kinds.is_empty()
        || safety
            .checks
            .values()
            .any(|c| c.validity == Validity::Invalid);
    safety.verdict = if invalid {
        Validity::Invalid
    } else if unknown {
        Validity::Unknown
    } else {
        Validity::Valid
    };
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, FencingToken, KeyId, Nanos};

    fn grant(ms: u64, client: u32, token: u64) -> Op {
        Op {
            time: Nanos(ms * 1_000_000),
            client: ClientId(client),
            ty: OpType::Ok,
            f: OpF::Acquire,
            key: KeyId(0),
            token: Some(FencingToken(token)),
            error: None,
            stale: None,
            grant: None,
        }
    }

    /// Tokens 2 and 1 granted 1 ms apart with ±1 ms clocks may be in either order: no certain
    /// reuse (a point checker sees one). 20 ms apart the order is certain and the reuse is;
    /// a token granted twice is a reuse whatever the clocks.
    #[test]
    fn a_token_is_reused_for_certain_only_when_the_order_is() {
        let b = ClockBounds {
            clients: 2,
            slots: [(0, 1_000_000), (1, 1_000_000)].into(),
        };
        assert_eq!(
            certain_token_reuses(&[grant(100, 0, 2), grant(101, 1, 1)], &b),
            0
        );
        assert_eq!(
            certain_token_reuses(&[grant(100, 0, 2), grant(120, 1, 1)], &b),
            1
        );
        assert_eq!(
            certain_token_reuses(&[grant(100, 0, 1), grant(101, 1, 2), grant(300, 0, 3)], &b),
            0
        );
        assert_eq!(
            certain_token_reuses(&[grant(100, 0, 5), grant(101, 1, 5)], &b),
            1
        );
    }

    fn judged(overlaps_certain: u64, lost_certain: u64) -> (IntervalJudgement, Certain) {
        let judgement = IntervalJudgement {
            bound_ns: 500_000,
            overlaps_certain,
            overlaps_ambiguous: 40,
            lost_writes_certain: lost_certain,
            ..Default::default()
        };
        let certain = Certain {
            lost_accepted: lost_certain,
            ..Default::default()
        };
        (judgement, certain)
    }

    /// A run whose point checkers saw 3 overlaps, 2 accepted lost writes, a reused token and a
    /// foreign release: across clocks with none of them certain, all are set aside (each with
    /// a note) and the verdict is valid; with a certain overlap the overlaps stand and the
    /// verdict stays invalid.
    #[test]
    fn point_findings_stand_across_clocks_only_as_far_as_they_are_certain() {
        let invalid = || {
            let mut s = SafetyResult::from(crate::Safety::from_outcomes(Vec::new()));
            s.verdict = Validity::Invalid;
            (s.mutex_violations, s.overlapping_grants, s.max_overlap_ms) = (3, 3, 0.2);
            (s.writes_after_lock_lost, s.writes_after_lock_lost_accepted) = (2, 2);
            (s.token_reuses, s.foreign_releases) = (1, 1);
            s.failed_checkers.clear();
            for (k, n) in [
                ("mutex", 3),
                ("write_after_lock_lost_accepted", 2),
                ("token_reuse", 1),
                ("foreign_release", 1),
            ] {
                s.violation_kinds.insert(k.into(), n);
            }
            s
        };
        let mut s = invalid();
        let (j, c) = judged(0, 0);
        let notes = reconcile(&mut s, &j, &c);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert_eq!(s.verdict, Validity::Valid, "{s:?}");
        assert!(s.violation_kinds.is_empty(), "{s:?}");
        assert_eq!((s.mutex_violations, s.writes_after_lock_lost), (0, 0));

        let mut s = invalid();
        let (j, c) = judged(1, 0);
        reconcile(&mut s, &j, &c);
        assert_eq!(s.verdict, Validity::Invalid);
        assert_eq!(s.violation_kinds.get("mutex"), Some(&3));
        assert_eq!(s.mutex_violations, 3);
    }
}
