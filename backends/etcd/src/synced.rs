//! Proving that a new watch is *synced*: that etcd delivers its events as they are applied,
//! not at the next 100 ms catch-up of its unsynced watcher group.
//!
//! # The race a start-revision-less watch still loses
//!
//! etcd 3.4.23 handles a watch create in `v3rpc/watch.go` (`recvLoop`) in two steps:
//! `wsrev := sws.watchStream.Rev()`, then `Watch(..., wsrev + 1, ...)` for a create without a
//! start revision, which in `mvcc/watchable_store.go` (`watchableStore.watch`) takes `s.mu` and
//! puts the watcher in the synced group only when `startRev > s.store.currentRev`. A write that
//! commits between the two steps makes `currentRev == wsrev + 1`, so the watcher lands in the
//! **unsynced** group after all, and its events wait for `syncWatchersLoop`'s next tick (every
//! 100 ms). The window is wider than it looks: a write's `End()`
//! (`watchableStoreTxnWrite.End`) holds `s.mu` while it notifies the synced watchers and only
//! then increments `currentRev`, so a create that read `wsrev` while a write was notifying
//! blocks on `s.mu` and registers after the increment, unsynced. Nothing in the `created`
//! answer says so: its header is `wsrev` either way. Under contention a lock key sees a write
//! every millisecond or two, and every waiter creates a watch, so a few percent of hand-offs
//! waited up to 100 ms, and every waiter queued behind them too.
//!
//! # The proof
//!
//! The waiter sends a progress request right behind its watch create, on the same stream.
//! `recvLoop` handles a stream's requests one at a time, in order, and etcd 3.4.23 answers a
//! progress request at once with the store's current revision `P` (`sws.watchStream.Rev()`),
//! read after the create registered its watcher. The revision `R` current at registration
//! therefore satisfies `wsrev <= R <= P`, and the watcher is synced exactly when `R == wsrev`.
//! So **`P == wsrev` proves the watch synced**; `P > wsrev` leaves it unproven, and the waiter
//! cancels it and creates another (bounded by `MAX_ATTEMPTS`; the last one is kept proven or
//! not, as it is still exact, only perhaps late). A write landing in the few microseconds
//! between the two reads makes a synced watch look unproven, which only costs a retry.
//!
//! From etcd 3.4.25 (and 3.5.8) a progress request is answered only once every watcher on the
//! stream is synced, and with the revision at that moment: an answer still proves the watch
//! synced when `P == wsrev`, and when it is deferred (or overtakes the `created` answer, as it
//! travels on the event channel there) the wait ends on the deletion event, as before.
//!
//! Progress answers carry no watch id, so a stream may hold stale ones (a wait that ended on its
//! deletion event before its answer came). `ProgressLedger` counts requests against answers so
//! only the answer to the latest request is read as the proof.

/// Watches created per wait before the last one is kept even if unproven.
pub(crate) const MAX_ATTEMPTS: u32 = 4;

/// What one response on a waiter's watch stream says, reduced to what the proof needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The `created` answer to a watch create, with its header revision (`wsrev`); `refused`
    /// when the server cancelled the watch at once.
    Created { id: i64, rev: i64, refused: bool },
    /// A progress answer: the member's revision when it handled a progress request.
    Progress { rev: i64 },
    /// Events for watch `id` (`deleted`: one of them is a deletion) or its cancellation.
    Watch {
        id: i64,
        deleted: bool,
        canceled: bool,
    },
}

impl Answer {
    /// Classifies one watch-stream response.
    pub(crate) fn of(resp: &etcd_client::WatchResponse) -> Answer {
        let rev = resp.header().map_or(i64::MAX, |h| h.revision());
        if resp.created() {
            return Answer::Created {
                id: resp.watch_id(),
                rev,
                refused: resp.canceled(),
            };
        }
        // etcd answers a progress request with watch id -1 (`clientv3.InvalidWatchID`).
        if resp.watch_id() == -1 && !resp.canceled() && resp.events().is_empty() {
            return Answer::Progress { rev };
        }
        Answer::Watch {
            id: resp.watch_id(),
            deleted: resp
                .events()
                .iter()
                .any(|e| e.event_type() == etcd_client::EventType::Delete),
            canceled: resp.canceled(),
        }
    }
}

/// Progress requests sent on one stream and not answered yet.
#[derive(Debug, Default)]
pub(crate) struct ProgressLedger {
    owed: u32,
}

impl ProgressLedger {
    /// A progress request was sent.
    pub(crate) fn asked(&mut self) {
        self.owed += 1;
    }

    /// A progress answer came; `Some(rev)` when it answers the latest request.
    pub(crate) fn answered(&mut self, rev: i64) -> Option<i64> {
        self.owed = self.owed.saturating_sub(1);
        (self.owed == 0).then_some(rev)
    }
}

/// What the answers after a watch's `created` showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// The progress answer had the `created` revision: the watch is synced.
    Synced,
    /// The store moved between the create and the progress answer: the watch may be unsynced.
    Unproven,
    /// The watched key's deletion came before the proof: the wait is over.
    Deleted,
    /// The server cancelled the watch.
    Canceled,
}

/// Reads answers for watch `id`, created at revision `created`, until they decide a [`Proof`].
#[derive(Debug)]
pub(crate) struct Prover {
    pub(crate) id: i64,
    pub(crate) created: i64,
}

impl Prover {
    /// Takes one answer; `Some` once the proof is decided.
    pub(crate) fn take(&self, ledger: &mut ProgressLedger, answer: Answer) -> Option<Proof> {
        match answer {
            Answer::Watch {
                id, canceled: true, ..
            } if id == self.id => Some(Proof::Canceled),
            Answer::Watch {
                id, deleted: true, ..
            } if id == self.id => Some(Proof::Deleted),
            Answer::Progress { rev } => ledger.answered(rev).map(|rev| {
                if rev == self.created {
                    Proof::Synced
                } else {
                    Proof::Unproven
                }
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROVER: Prover = Prover {
        id: 7,
        created: 100,
    };

    fn run(ledger: &mut ProgressLedger, answers: &[Answer]) -> Option<Proof> {
        answers.iter().find_map(|a| PROVER.take(ledger, *a))
    }

    /// The proof one progress answer at `rev` gives, for a single request.
    fn proof_at(rev: i64) -> Option<Proof> {
        let mut ledger = ProgressLedger::default();
        ledger.asked();
        run(&mut ledger, &[Answer::Progress { rev }])
    }

    #[test]
    fn progress_at_the_created_revision_proves_the_watch_synced() {
        assert_eq!(proof_at(100), Some(Proof::Synced));
    }

    /// The race: a write committed between the create's `wsrev` read and the registration.
    #[test]
    fn progress_past_the_created_revision_leaves_it_unproven() {
        assert_eq!(proof_at(101), Some(Proof::Unproven));
    }

    /// A wait that ended on its deletion left its progress answer on the stream: the next
    /// wait must not read that stale answer as its own proof.
    #[test]
    fn a_stale_progress_answer_is_not_the_proof() {
        let mut ledger = ProgressLedger::default();
        ledger.asked(); // an earlier wait's request, answered late
        ledger.asked(); // this wait's
        let stale = Answer::Progress { rev: 100 };
        assert_eq!(PROVER.take(&mut ledger, stale), None);
        let proof = run(&mut ledger, &[Answer::Progress { rev: 103 }]);
        assert_eq!(proof, Some(Proof::Unproven));
    }

    #[test]
    fn the_deletion_or_a_cancel_of_this_watch_decides_before_the_proof() {
        let watch = |id, deleted, canceled| Answer::Watch {
            id,
            deleted,
            canceled,
        };
        let (other, deleted, canceled) = (
            watch(6, true, false),
            watch(7, true, false),
            watch(7, false, true),
        );
        let mut ledger = ProgressLedger::default();
        ledger.asked();
        assert_eq!(run(&mut ledger, &[other, deleted]), Some(Proof::Deleted));
        assert_eq!(run(&mut ledger, &[canceled]), Some(Proof::Canceled));
        assert_eq!(ledger.owed, 1, "the answer is still owed");
    }
}
