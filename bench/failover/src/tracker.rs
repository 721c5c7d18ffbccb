//! What the coordinator knows of the election while it runs, from the candidates' ops as
//! they arrive: who believes it leads, who observes whom. It only paces the rounds; every
//! figure comes from the checker reading the history.

use lockbench_core::{OpF, OpType};
use lockbench_workloads::candidate::CandidateEvent;
use std::collections::{BTreeMap, BTreeSet};

/// What the coordinator knows of the election, from the candidates' ops.
#[derive(Default)]
pub(crate) struct Tracker {
    /// Candidates that believe they lead, with their epoch.
    pub(crate) leading: BTreeMap<u32, u64>,
    /// Each candidate's latest observation: (leader candidate, epoch), or none.
    pub(crate) seen: BTreeMap<u32, Option<(u32, u64)>>,
    pub(crate) ready: BTreeSet<u32>,
    /// Candidates whose process ended (killed, or failed).
    pub(crate) gone: BTreeSet<u32>,
    pub(crate) errors: Vec<String>,
}

impl Tracker {
    pub(crate) fn apply(&mut self, ev: &CandidateEvent) {
        match ev {
            CandidateEvent::Ready(c) => {
                self.ready.insert(c.0);
            }
            CandidateEvent::Error(c, e) => {
                self.errors.push(format!("candidate {c}: {e}"));
                self.gone.insert(c.0);
            }
            CandidateEvent::Gone(c) => {
                self.gone.insert(c.0);
                self.leading.remove(&c.0);
            }
            CandidateEvent::Op(op) => {
                let c = op.client.0;
                match (op.f, op.ty) {
                    (OpF::Campaign, OpType::Ok) => {
                        self.leading.insert(c, op.token.map_or(0, |t| t.0));
                    }
                    (OpF::LeaderLost, _) | (OpF::Resign, OpType::Invoke) => {
                        self.leading.remove(&c);
                    }
                    (OpF::Observe, OpType::Ok) => {
                        let leader = op.token.map(|t| (op.key.0, t.0));
                        self.seen.insert(c, leader);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The leader when the election has settled among `live`: exactly one of them believes it
    /// leads and every one of them observes it.
    pub(crate) fn settled(&self, live: &BTreeSet<u32>) -> Option<(u32, u64)> {
        let mut leaders = self.leading.iter().filter(|(c, _)| live.contains(c));
        let (&c, &epoch) = leaders.next()?;
        if leaders.next().is_some() {
            return None;
        }
        live.iter()
            .all(|o| self.seen.get(o).copied().flatten() == Some((c, epoch)))
            .then_some((c, epoch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{ClientId, FencingToken, KeyId, Nanos, Op};

    fn op(client: u32, f: OpF, leader: Option<(u32, u64)>) -> CandidateEvent {
        CandidateEvent::Op(Op::complete(
            Nanos(0),
            ClientId(client),
            f,
            KeyId(leader.map_or(0, |l| l.0)),
            OpType::Ok,
            leader.map(|l| FencingToken(l.1)),
            None,
        ))
    }

    #[test]
    fn settled_means_one_live_leader_that_every_live_candidate_observes() {
        let mut t = Tracker::default();
        let live: BTreeSet<u32> = [1, 2].into();
        t.apply(&op(1, OpF::Campaign, Some((1, 7))));
        assert_eq!(t.settled(&live), None, "nobody observed it yet");
        t.apply(&op(1, OpF::Observe, Some((1, 7))));
        t.apply(&op(2, OpF::Observe, Some((1, 7))));
        assert_eq!(t.settled(&live), Some((1, 7)));
        // A second candidate believing it leads (a paused leader not yet told) unsettles it,
        // unless it is not live.
        t.apply(&op(2, OpF::Campaign, Some((2, 8))));
        assert_eq!(t.settled(&live), None);
        assert_eq!(t.settled(&[1].into()), Some((1, 7)));
        t.apply(&op(1, OpF::LeaderLost, Some((1, 7))));
        t.apply(&op(1, OpF::Observe, Some((2, 8))));
        t.apply(&op(2, OpF::Observe, Some((2, 8))));
        assert_eq!(t.settled(&live), Some((2, 8)));
    }
}
