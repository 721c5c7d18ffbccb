//! Lost-while-held ([`crate::truth`]) judged over time intervals, for workers on their own
//! clocks.
//!
//! The servers' observations are on the coordinator's clock (the observer runs there), exact.
//! A client's belief that it holds a key runs from its acquire's `ok` to its release's invoke,
//! and on a worker with its own clock each of those is known only to `time ± bound`
//! ([`ClockBounds`]). An episode (the servers, having named the client during its belief, stop
//! naming it while the belief lasts) is then:
//!
//! - **certain** when it happens at every point of the intervals: found with every belief
//!   shrunk to the part it surely covers, from its grant's latest possible time to its
//!   release's earliest. Every placement's belief contains that part, so the servers' naming
//!   (after the latest grant), their change (before the earliest release) and a read's `sent`
//!   (after the latest grant) are inside every placement's belief too;
//! - **ambiguous** when it happens at some points only: found with every belief stretched to
//!   all it may cover (earliest grant to latest release; a release whose latest time passes the
//!   same client's next grant on the key ends at that grant), and not certain. Any placement's
//!   episode is inside the stretched belief, so none is missed.
//!
//! Both are [`crate::truth`]'s own checker run over the history with the boundaries moved, so
//! the rule is the one the point checker applies, never a second version of it. The counts
//! are episodes; `ambiguous` is the stretched count less the certain one.

use crate::intervals::ClockBounds;
use lockbench_core::{ClientId, History, KeyId, Nanos, Op, OpF, OpType};
use std::collections::HashMap;

/// Lost-while-held episodes over intervals: certain, and ambiguous. `None` when the history
/// has no server observations (the run did not observe the servers: nothing to judge).
pub fn judge(history: &History, bounds: &ClockBounds) -> Option<(u64, u64)> {
    if history.server().is_empty() {
        return None;
    }
    let certain = episodes(history, bounds, Beliefs::Shrunk);
    let possible = episodes(history, bounds, Beliefs::Stretched);
    Some((certain, possible.saturating_sub(certain)))
}

/// Which way each belief's boundaries move.
#[derive(Clone, Copy, PartialEq)]
enum Beliefs {
    /// Grant at its latest, release at its earliest: what every placement holds.
    Shrunk,
    /// Grant at its earliest, release at its latest: what some placement holds.
    Stretched,
}

/// The point checker's episode count over `history` with every belief moved to `beliefs`.
fn episodes(history: &History, bounds: &ClockBounds, beliefs: Beliefs) -> u64 {
    let moved = History::with_faults(
        place(history.ops(), bounds, beliefs),
        history.faults().to_vec(),
    )
    .with_server(history.server().to_vec());
    crate::truth::check(&moved).map_or(0, |r| r.lost_while_held)
}

/// `ops` with each belief's grant (`acquire ok`) and release invoke moved by its bound; a
/// shrunk belief with nothing left is dropped, a stretched release that would pass the same
/// client's next grant on the key is dropped (that grant ends the belief, as it does in
/// [`crate::truth`]).
fn place(ops: &[Op], bounds: &ClockBounds, beliefs: Beliefs) -> Vec<Op> {
    let mut out: Vec<Option<Op>> = ops.iter().cloned().map(Some).collect();
    // Per (client, key): the open grant (shrunk), the last release (stretched).
    let mut grant: HashMap<(ClientId, KeyId), usize> = HashMap::new();
    let mut release: HashMap<(ClientId, KeyId), usize> = HashMap::new();
    let at = |out: &[Option<Op>], i: usize| out[i].as_ref().map(|o| o.time);
    for (i, op) in ops.iter().enumerate() {
        let u = bounds.of(op);
        let key = (op.client, op.key);
        let (early, late) = (Nanos(op.time.0.saturating_sub(u)), Nanos(op.time.0 + u));
        match (op.f, op.ty, beliefs) {
            (OpF::Acquire, OpType::Ok, Beliefs::Shrunk) => {
                set(&mut out, i, late);
                grant.insert(key, i);
            }
            (OpF::Acquire, OpType::Ok, Beliefs::Stretched) => {
                set(&mut out, i, early);
                if let Some(r) = release.remove(&key)
                    && at(&out, r) >= Some(early)
                {
                    out[r] = None;
                }
            }
            (OpF::Release, OpType::Invoke, Beliefs::Shrunk) => {
                set(&mut out, i, early);
                if let Some(g) = grant.remove(&key)
                    && at(&out, g) >= Some(early)
                {
                    (out[g], out[i]) = (None, None);
                }
            }
            (OpF::Release, OpType::Invoke, Beliefs::Stretched) => {
                set(&mut out, i, late);
                release.insert(key, i);
            }
            _ => {}
        }
    }
    out.into_iter().flatten().collect()
}

fn set(out: &mut [Option<Op>], i: usize, t: Nanos) {
    if let Some(op) = out[i].as_mut() {
        op.time = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::ServerObservation;
    use std::collections::BTreeMap;

    fn t(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }

    /// Client `c`'s hold of key 0 from `from` to `to` (µs): its grant and release invoke.
    fn hold(c: u32, from: u64, to: u64) -> [Op; 2] {
        let (client, key) = (ClientId(c), KeyId(0));
        let mut grant = Op::invoke(t(from), client, OpF::Acquire, key);
        grant.ty = OpType::Ok;
        [grant, Op::invoke(t(to), client, OpF::Release, key)]
    }

    fn seen(us: u64, holder: Option<u32>) -> ServerObservation {
        ServerObservation::holder(t(us), KeyId(0), holder.map(ClientId))
    }

    fn history(holds: &[[Op; 2]], server: Vec<ServerObservation>) -> History {
        History::from_unordered(holds.iter().flatten().cloned().collect()).with_server(server)
    }

    /// Slot `s` of 2 known to ± `us` µs.
    fn bound(slot: u32, us: u64) -> ClockBounds {
        ClockBounds {
            clients: 2,
            slots: BTreeMap::from([(slot, us * 1_000)]),
        }
    }

    /// The servers hand client 0's lock to client 1 20 ms into a 40 ms hold: lost while held
    /// whatever client 0's clock did within 1 ms. The point checker agrees.
    #[test]
    fn a_loss_deep_inside_the_belief_is_certain() {
        let h = history(
            &[hold(0, 10_000, 50_000)],
            vec![seen(12_000, Some(0)), seen(30_000, Some(1))],
        );
        assert_eq!(crate::truth::check(&h).unwrap().lost_while_held, 1);
        assert_eq!(judge(&h, &bound(0, 1_000)), Some((1, 0)));
        assert_eq!(judge(&h, &ClockBounds::default()), Some((1, 0)));
        // What results' clocks section gets.
        let j = crate::intervals::judge_history(&h, &bound(0, 1_000));
        assert_eq!(j.lost_while_held_certain, Some(1));
        assert_eq!(j.lost_while_held_ambiguous, Some(0));
        assert_eq!(j.bound_ns, 1_000_000);
        let unobserved = History::from_unordered(h.ops().to_vec());
        let j = crate::intervals::judge_history(&unobserved, &bound(0, 1_000));
        assert_eq!(j.lost_while_held_certain, None, "not observed, not judged");
    }

    /// Client 0 releases at 50 ms by its clock, known to ± 0.5 ms; the servers free the lock
    /// 0.2 ms later, at 50.2 ms (as a release does). Taken as points with the worker's clock
    /// 0.3 ms late (its release seen at 50.5 ms) the point checker invents a 0.3 ms episode;
    /// over the intervals it may or may not have happened: ambiguous, never certain.
    #[test]
    fn a_loss_at_the_release_within_the_bound_is_ambiguous() {
        let late = history(
            &[hold(0, 10_000, 50_500)],
            vec![seen(12_000, Some(0)), seen(50_200, None)],
        );
        assert_eq!(
            crate::truth::check(&late).unwrap().lost_while_held,
            1,
            "as points"
        );
        assert_eq!(judge(&late, &bound(0, 500)), Some((0, 1)));
        // Another slot's bound says nothing about client 0: exact, so certain.
        assert_eq!(judge(&late, &bound(1, 500)), Some((1, 0)));
    }

    /// The servers still name client 0 from an earlier hold, and stop 0.5 ms after its new
    /// grant at 10 ms ± 1 ms: if the grant came first they stopped naming it during its belief
    /// (an episode), if not they never named it during this belief (none). Ambiguous.
    #[test]
    fn a_loss_at_the_grant_within_the_bound_is_ambiguous() {
        let h = history(
            &[hold(0, 10_000, 50_000)],
            vec![seen(5_000, Some(0)), seen(10_500, Some(1))],
        );
        assert_eq!(judge(&h, &bound(0, 1_000)), Some((0, 1)));
        assert_eq!(judge(&h, &ClockBounds::default()), Some((1, 0)));
    }

    /// A clean hand-off: the servers name each holder during its hold and free the lock after
    /// each release; a large bound (5 ms) makes nothing certain, and the hand-offs 0.3 ms apart
    /// are at most ambiguous. Without server lines there is nothing to judge.
    #[test]
    fn clean_hand_offs_are_never_certain_and_no_observer_means_no_judgement() {
        let holds = [hold(0, 10_000, 20_000), hold(1, 20_300, 30_000)];
        let server = vec![
            seen(10_400, Some(0)),
            seen(20_200, None),
            seen(20_500, Some(1)),
            seen(30_200, None),
        ];
        let h = history(&holds, server);
        assert_eq!(crate::truth::check(&h).unwrap().lost_while_held, 0);
        assert_eq!(judge(&h, &ClockBounds::default()), Some((0, 0)));
        let (certain, _) = judge(&h, &bound(0, 5_000)).unwrap();
        assert_eq!(certain, 0);
        assert_eq!(judge(&history(&holds, Vec::new()), &bound(0, 5_000)), None);
    }

    /// A deliberately broken lock: the servers give client 0's lock to client 1 in the middle
    /// of every one of client 0's 10 holds. With both clients on clocks known to ± 2 ms the 10
    /// episodes are still certain: the intervals hide no real loss.
    #[test]
    fn a_broken_lock_s_losses_stay_certain_under_a_bound() {
        let mut holds = Vec::new();
        let mut server = Vec::new();
        for i in 0..10u64 {
            let start = 100_000 * i;
            holds.push(hold(0, start + 10_000, start + 60_000));
            server.push(seen(start + 12_000, Some(0)));
            server.push(seen(start + 30_000, Some(1)));
            server.push(seen(start + 70_000, None));
        }
        let h = history(&holds, server);
        let both = ClockBounds {
            clients: 2,
            slots: BTreeMap::from([(0, 2_000_000), (1, 2_000_000)]),
        };
        assert_eq!(judge(&h, &both), Some((10, 0)));
    }

    /// A stretched release past the same client's next grant ends at that grant: the next
    /// belief's own loss is judged once, not merged with or cut by the earlier release.
    #[test]
    fn back_to_back_holds_of_one_client_stay_two_beliefs() {
        let h = history(
            &[hold(0, 10_000, 20_000), hold(0, 20_100, 60_000)],
            vec![seen(10_500, Some(0)), seen(40_000, Some(1))],
        );
        let b = bound(0, 1_000);
        assert_eq!(judge(&h, &b), Some((1, 0)));
        // The first release (stretched to 21 ms) would otherwise end the second belief
        // (stretched from 19.1 ms) before its loss.
        assert_eq!(episodes(&h, &b, Beliefs::Stretched), 1);
    }
}
