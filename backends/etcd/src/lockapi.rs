//! `etcd-lockapi`: the server-side v3 Lock API (`v3lockpb.Lock`) on this client's lease,
//! released by a KV `Delete` of the key it granted (what the server's `Unlock` does; below: why
//! not `Unlock`).
//!
//! The server runs Go's `concurrency.Mutex` for us (`etcdserver/api/v3lock/lock.go`): one
//! `Lock` RPC blocks until granted, so the client sends 1 request per acquisition however long
//! it waits, but the server's internal client does the txn / get / watch work, and its wait
//! is Go's `waitDeletes` with `WithRev(header)`: an *unsynced* watch, so contended hand-offs
//! pay etcd's 100 ms watcher-sync period (see [`crate::wait`] and the crate docs for numbers).
//! Those internal requests go through an in-process adapter, not the gRPC server, so they do
//! not show up in `grpc_server_msg_received_total`.
//!
//! Lock name: `{prefix}/lockapi/k{key}`; the server creates `{name}/{lease id hex}`.
//!
//! Fencing token: the `Lock` response header's revision. It is free (no extra request) and
//! strictly grows across grants of one lock: the server returns the header of the read that
//! found no older contender. A later grant's read happens after the earlier holder's entry was
//! deleted, and that deletion itself created a revision above the earlier grant's header
//! revision (which was read while the entry still existed).
//!
//! Release: a KV `Delete` of the key the server created, not `Unlock`. The server's `Unlock`
//! is that same `Delete` (`v3lock/lock.go`: `ls.c.Delete(ctx, req.Key)`), but it answers only
//! the header, so it cannot tell a release from a no-op: when the lease expired while the
//! holder held the lock (the holder was paused, or cut off), the key went with the lease,
//! `Unlock` deleted nothing and reported success, and the release checker counted a release of
//! a lock already granted to another client (`foreign_release`), which this recipe cannot
//! make: each holder's key is its own (`{name}/{lease id hex}`). The `Delete` answers how many
//! keys it removed, so a release that removed nothing is `fail lock-lost`, at once, not only
//! after the keep-alive has seen the lease die. Same one request per release, and the same one
//! message in etcd's `grpc_server_msg_received_total`, so requests per acquisition stay 2
//! (`Lock` + `Delete`) on both sides of the cross-check.

use crate::errors::CallError;
use crate::session::Session;
use etcd_client::LockOptions;

/// Acquires lock `name`; returns the key the server created and the fencing token.
pub(crate) async fn acquire(
    session: &mut Session,
    name: &[u8],
    requests: &mut u64,
) -> Result<(Vec<u8>, i64), CallError> {
    *requests += 1;
    let options = LockOptions::new().with_lease(session.lease);
    // No timeout: this call blocks while the lock is held by others; the caller cancels it.
    let mut resp = session
        .client
        .lock(name.to_vec(), Some(options))
        .await
        .map_err(|e| crate::errors::classify(&e))?;
    let token = resp.take_header().map_or(0, |h| h.revision());
    Ok((resp.key().to_vec(), token))
}

/// Releases the lock held under `key`. `Ok(false)` when the key was already gone (the lease
/// expired or was revoked): the lock had been lost.
pub(crate) async fn release(
    session: &mut Session,
    key: &[u8],
    requests: &mut u64,
) -> Result<bool, CallError> {
    crate::mutex::delete_own(session, key.to_vec(), requests).await
}
