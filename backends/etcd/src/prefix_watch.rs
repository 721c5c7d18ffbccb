//! `etcd-herd`: a deliberately naive etcd lock, where every waiter watches the **whole lock
//! prefix** and re-checks who is first on any event. Kept so the herd workload can measure
//! the fan-out `etcd-lease` avoids by watching only the next-lower create revision.
//!
//! Entries are exactly `etcd-lease`'s (one key per contender under `{prefix}/herd/k{key}/`,
//! attached to the contender's lease, ordered by create revision; the fencing token is the own
//! entry's create revision). Only the wait differs:
//!
//! 1. One transaction: if my entry does not exist, read the *oldest* entry (the owner) and put
//!    mine; else read both. If there was none, or the owner is my entry, I hold the lock
//!    (1 request).
//! 2. Otherwise open a watch on the prefix starting right after the transaction's revision (no
//!    event between the check and the watch can be missed) and, on every response with events
//!    (any put or delete under the prefix: a release, a newcomer queueing), re-read the owner
//!    in a transaction guarded by my entry's create revision (`LEASE_GONE` when my lease died
//!    while I waited). A release with N waiters therefore sends N events and costs N re-checks,
//!    N - 1 of them wasted.
//! 3. On the grant the watch stream is dropped (which ends its watcher on the server).
//!
//! Counting ([`WakeupTally`]): notifications are the watch *events* delivered (a response can
//! carry several; etcd's `etcd_debugging_mvcc_events_total` counts the same way, so the two
//! can be compared one to one); each re-check is a request in reaction, wasted when it still
//! finds an older entry.

use crate::errors::{CallError, timed};
use crate::mutex::{self, LeaseKey};
use crate::session::Session;
use etcd_client::{
    Compare, CompareOp, GetOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use lockbench_core::WakeupTally;

/// The oldest entry under `dir` (the owner), keys only.
fn owner_query(dir: &[u8]) -> TxnOp {
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1)
        .with_keys_only();
    TxnOp::get(dir.to_vec(), Some(opts))
}

/// The create revision of the first key of the `index`-th response, if any.
fn created_at(responses: &[TxnOpResponse], index: usize) -> Option<i64> {
    match responses.get(index) {
        Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.create_revision()),
        _ => None,
    }
}

/// Acquires the lock `k`; returns this client's create revision (the fencing token).
pub(crate) async fn acquire(
    session: &mut Session,
    k: &LeaseKey,
    tally: &WakeupTally,
    requests: &mut u64,
) -> Result<i64, CallError> {
    let txn = mutex::enter(k, session.lease, owner_query(&k.dir), [owner_query(&k.dir)]);
    *requests += 1;
    let mut resp = timed(session.client.txn(txn)).await?;
    let header_rev = resp.take_header().map_or(0, |h| h.revision());
    let responses = resp.op_responses();
    // Created now: the owner was read before my put (none: I am the owner). Re-entered: my
    // entry, then the owner.
    let (my_rev, owner) = if resp.succeeded() {
        (header_rev, created_at(&responses, 0).unwrap_or(header_rev))
    } else {
        let mine = created_at(&responses, 0).ok_or(CallError::LEASE_GONE)?;
        (mine, created_at(&responses, 1).unwrap_or(mine))
    };
    if owner == my_rev {
        return Ok(my_rev);
    }

    // Watch everything under the prefix from the revision after the check.
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(header_rev + 1);
    *requests += 1;
    let mut stream = timed(session.client.watch(k.dir.clone(), Some(options))).await?;
    loop {
        let resp = match stream.message().await {
            Ok(Some(r)) => r,
            Ok(None) => return Err(CallError::CONNECTION_LOST),
            Err(e) => return Err(crate::errors::classify(&e)),
        };
        if resp.canceled() {
            return Err(CallError::CONNECTION_LOST);
        }
        let events = resp.events().len() as u64;
        if events == 0 {
            continue; // the `created` answer, or a progress notification
        }
        tally.notifications(events);
        let recheck = Txn::new()
            .when([Compare::create_revision(
                k.mine.clone(),
                CompareOp::Equal,
                my_rev,
            )])
            .and_then([owner_query(&k.dir)]);
        *requests += 1;
        tally.request();
        let resp = timed(session.client.txn(recheck)).await?;
        if !resp.succeeded() {
            return Err(CallError::LEASE_GONE);
        }
        if created_at(&resp.op_responses(), 0) == Some(my_rev) {
            return Ok(my_rev);
        }
        tally.wasted();
    }
}
