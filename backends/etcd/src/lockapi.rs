//! `etcd-lockapi`: the server-side v3 Lock API (`v3lockpb.Lock/Unlock`) on this client's lease.
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
//! Release: `Unlock(key)`. The server's `Unlock` is a plain `Delete` whose answer does not say
//! whether the key still existed, so a lost lock is reported (`LockLost`) only when the
//! session's keep-alive has already seen the lease die (within `ttl / 3` of its death).

use crate::errors::{CallError, timed};
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

/// Releases the lock held under `key`. `Ok(false)` when the lease was already known dead.
pub(crate) async fn release(
    session: &mut Session,
    key: &[u8],
    requests: &mut u64,
) -> Result<bool, CallError> {
    *requests += 1;
    timed(session.client.unlock(key.to_vec())).await?;
    Ok(!session.lease_dead())
}
