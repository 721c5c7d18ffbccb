//! `etcd-lease`: the algorithm of etcd's Go `concurrency.Mutex`, driven from the client, with a
//! wait that etcd serves at once (see [`crate::wait`]).
//!
//! Lock key `{prefix}/lease/k{key}/` holds one entry per contender, `{lock key}{lease id hex}`,
//! attached to the contender's lease. Contenders are ordered by create revision; the oldest
//! holds the lock, every other waits for the deletion of the entry with the *next lower* create
//! revision (no herd: one release wakes one waiter). The fencing token is the holder's own
//! create revision, which only grows across grants of one lock: a later grant's entry was
//! created after every earlier holder's entry (it waited for all of them to be deleted, or
//! they did not exist yet).
//!
//! One change to Go's first transaction saves a request per contended acquire: Go's `Then`
//! branch reads the *first*-created entry (the owner) and then issues a separate `get` for the
//! predecessor; ours reads the *last*-created entry **before** putting our own, which is
//! exactly our predecessor (or nothing, in which case we hold the lock). The re-check after a
//! predecessor's deletion is a transaction guarded by `create_revision(myKey) == myRev`, so a
//! waiter whose lease died while it waited learns it (`SessionExpired`) instead of being
//! granted a lock it no longer has (Go 3.4's Mutex misses this case).
//!
//! Requests per acquisition: 1 (uncontended); 5 when it waits once (txn, watch create, progress
//! request, re-check txn, watch cancel), +1 when the cluster's revision moved between the txn and
//! the watch's creation, +3 (cancel, create, progress) for each watch that could not be proven
//! synced ([`crate::synced`]). Release: 1 (delete).

use crate::errors::{CallError, timed};
use crate::session::Session;
use crate::wait::DeletionWaiter;
use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};
use lockbench_core::WakeupTally;

/// Precomputed names for one lock key: the contenders' directory and this client's entry.
#[derive(Debug)]
pub(crate) struct LeaseKey {
    /// `{prefix}/{recipe dir}/k{key}/`
    pub(crate) dir: Vec<u8>,
    /// `{dir}{lease id hex}`
    pub(crate) mine: Vec<u8>,
}

impl LeaseKey {
    /// The names of lock `key` for the recipe whose entries live under `{prefix}/{recipe}/`
    /// (`lease` for etcd-lease, `herd` for etcd-herd: recipes never share entries).
    pub(crate) fn new(prefix: &str, recipe: &str, key: u32, lease: i64) -> LeaseKey {
        let dir = format!("{prefix}/{recipe}/k{key}/");
        let mine = format!("{dir}{lease:x}");
        LeaseKey {
            dir: dir.into_bytes(),
            mine: mine.into_bytes(),
        }
    }
}

/// Contender entries created before `below` (exclusive of revision `below` itself when
/// nonzero), newest first, at most one: the predecessor.
fn predecessor_query(dir: &[u8], below: i64) -> TxnOp {
    let mut opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1)
        .with_keys_only();
    if below > 0 {
        opts = opts.with_max_create_revision(below - 1);
    }
    TxnOp::get(dir.to_vec(), Some(opts))
}

/// The first key of the first `Get` in a transaction's responses, and the response header's
/// revision.
fn first_key(responses: Vec<TxnOpResponse>, index: usize) -> Option<(Vec<u8>, i64)> {
    match responses.into_iter().nth(index) {
        Some(TxnOpResponse::Get(mut g)) => g.take_kvs().into_iter().next().map(|kv| {
            let rev = kv.create_revision();
            (kv.into_key_value().0, rev)
        }),
        _ => None,
    }
}

/// The first request of an acquire: if my entry does not exist, run `query` and then put my
/// entry on `lease` (so `query` sees the entries before mine); else read my entry (left by an
/// earlier acquire of this client, reused as Go does) and run `on_reentry`. The first response
/// is `query`'s or my entry's.
pub(crate) fn enter<const N: usize>(
    k: &LeaseKey,
    lease: i64,
    query: TxnOp,
    on_reentry: [TxnOp; N],
) -> Txn {
    let mut otherwise = vec![TxnOp::get(k.mine.clone(), None)];
    otherwise.extend(on_reentry);
    Txn::new()
        .when([Compare::create_revision(
            k.mine.clone(),
            CompareOp::Equal,
            0,
        )])
        .and_then([
            query,
            TxnOp::put(
                k.mine.clone(),
                [],
                Some(PutOptions::new().with_lease(lease)),
            ),
        ])
        .or_else(otherwise)
}

/// Acquires the lock `k`; returns this client's create revision (the fencing token).
pub(crate) async fn acquire(
    session: &mut Session,
    waiter: &mut DeletionWaiter,
    k: &LeaseKey,
    tally: &WakeupTally,
    requests: &mut u64,
) -> Result<i64, CallError> {
    // Txn: if my entry does not exist, read my predecessor and create my entry; else read my
    // entry (left by an earlier acquire of this client: reuse it, as Go does).
    let txn = enter(k, session.lease, predecessor_query(&k.dir, 0), []);
    *requests += 1;
    let mut resp = timed(session.client.txn(txn)).await?;
    let header_rev = resp.take_header().map_or(0, |h| h.revision());
    let (my_rev, mut pred) = if resp.succeeded() {
        // My put is the transaction's only write, so its revision is the header's.
        (
            header_rev,
            first_key(resp.op_responses(), 0).map(|(key, created)| (key, created, header_rev)),
        )
    } else {
        let Some((_, rev)) = first_key(resp.op_responses(), 0) else {
            return Err(CallError::LEASE_GONE);
        };
        (rev, recheck(session, &k.dir, &k.mine, rev, requests).await?)
    };
    while let Some((key, created, seen_at)) = pred {
        let notified = waiter
            .wait_deleted(&mut session.client, &key, created, seen_at, requests)
            .await?;
        pred = recheck(session, &k.dir, &k.mine, my_rev, requests).await?;
        if notified {
            // The deletion event was the notification; the watch cancel and the re-check are
            // the requests it caused.
            tally.notification();
            tally.request();
            tally.request();
            if pred.is_some() {
                tally.wasted();
            }
        }
    }
    Ok(my_rev)
}

/// After a predecessor went away: is there still an entry older than mine? Returns it as
/// (key, create revision, revision it was seen at). `Err(LEASE_GONE)`
/// when my own entry is gone (lease expired or revoked while waiting).
async fn recheck(
    session: &mut Session,
    dir: &[u8],
    mine: &[u8],
    my_rev: i64,
    requests: &mut u64,
) -> Result<Option<(Vec<u8>, i64, i64)>, CallError> {
    let txn = Txn::new()
        .when([Compare::create_revision(
            mine.to_vec(),
            CompareOp::Equal,
            my_rev,
        )])
        .and_then([predecessor_query(dir, my_rev)]);
    *requests += 1;
    let mut resp = timed(session.client.txn(txn)).await?;
    if !resp.succeeded() {
        return Err(CallError::LEASE_GONE);
    }
    let header_rev = resp.take_header().map_or(0, |h| h.revision());
    Ok(first_key(resp.op_responses(), 0).map(|(key, created)| (key, created, header_rev)))
}

/// Releases the lock by deleting this client's entry. `Ok(false)` when the entry was already
/// gone (the lease expired or was revoked): the lock had been lost.
pub(crate) async fn release(
    session: &mut Session,
    k: &LeaseKey,
    requests: &mut u64,
) -> Result<bool, CallError> {
    delete_own(session, k.mine.clone(), requests).await
}

/// Deletes `key`, an entry only this client's lease ever holds: `Ok(true)` when it removed it,
/// `Ok(false)` when it was already gone (with the lease). One request.
pub(crate) async fn delete_own(
    session: &mut Session,
    key: Vec<u8>,
    requests: &mut u64,
) -> Result<bool, CallError> {
    *requests += 1;
    let resp = timed(session.client.delete(key, None)).await?;
    Ok(resp.deleted() == 1)
}
