//! [`EtcdClient`]: one lockbench client, its session, and the recipe it runs.
//!
//! The recipes share the session (connection + lease + keep-alive task) and differ only in
//! what `acquire` and `release` send, so one client type dispatches on a small enum once per
//! call rather than having near-identical client types.

use crate::errors::CallError;
use crate::lockapi;
use crate::mutex::{self, LeaseKey};
use crate::prefix_watch;
use crate::session::Session;
use crate::wait::DeletionWaiter;
use lockbench_core::{ErrorKind, FencingToken, Grant, KeyId, LockClient, Outcome, WakeupTally};

/// What a granted etcd lock keeps for its release.
#[derive(Debug)]
pub struct EtcdHandle {
    /// The fencing token's source: the lock entry's create revision (`etcd-lease`) or the Lock
    /// response's header revision (`etcd-lockapi`).
    pub revision: i64,
    /// The key the server created (`etcd-lockapi` only; `etcd-lease` knows its key per lock and
    /// leaves this empty, without allocating).
    pub lock_key: Vec<u8>,
}

/// Per-recipe state: names precomputed at connect time, so an acquire formats nothing.
pub(crate) enum Recipe {
    /// `etcd-lease`: per-key contender entries and the deletion waiter.
    Lease {
        keys: Vec<LeaseKey>,
        waiter: DeletionWaiter,
    },
    /// `etcd-lockapi`: per-key lock names.
    LockApi { names: Vec<Vec<u8>> },
    /// `etcd-herd`: per-key contender entries; waiters watch the whole prefix.
    Herd { keys: Vec<LeaseKey> },
}

/// One etcd lock client: its own connection, lease and keep-alive task.
pub struct EtcdClient {
    pub(crate) session: Session,
    pub(crate) recipe: Recipe,
    /// Unary requests, watch creates and watch cancels sent so far (keep-alive pings excluded).
    pub(crate) requests: u64,
    /// The backend-wide wake-up counters.
    pub(crate) tally: WakeupTally,
}

fn failed<T>(e: CallError) -> Outcome<T> {
    if e.definite {
        Outcome::Fail(e.kind)
    } else {
        Outcome::Info(e.kind)
    }
}

impl LockClient for EtcdClient {
    type Handle = EtcdHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<EtcdHandle>> {
        let index = key.0 as usize;
        let result = match &mut self.recipe {
            Recipe::Lease { keys, waiter } => {
                let Some(k) = keys.get(index) else {
                    return Outcome::Fail(ErrorKind::Other);
                };
                mutex::acquire(
                    &mut self.session,
                    waiter,
                    k,
                    &self.tally,
                    &mut self.requests,
                )
                .await
                .map(|rev| (rev, Vec::new()))
            }
            Recipe::Herd { keys } => {
                let Some(k) = keys.get(index) else {
                    return Outcome::Fail(ErrorKind::Other);
                };
                prefix_watch::acquire(&mut self.session, k, &self.tally, &mut self.requests)
                    .await
                    .map(|rev| (rev, Vec::new()))
            }
            Recipe::LockApi { names } => {
                let Some(name) = names.get(index) else {
                    return Outcome::Fail(ErrorKind::Other);
                };
                lockapi::acquire(&mut self.session, name, &mut self.requests)
                    .await
                    .map(|(lock_key, rev)| (rev, lock_key))
            }
        };
        match result {
            Ok((revision, lock_key)) => Outcome::Ok(Grant {
                key,
                token: Some(FencingToken(revision as u64)),
                handle: EtcdHandle { revision, lock_key },
            }),
            Err(e) => failed(e),
        }
    }

    async fn release(&mut self, grant: Grant<EtcdHandle>) -> Outcome<()> {
        let result = match &mut self.recipe {
            Recipe::Lease { keys, .. } | Recipe::Herd { keys } => {
                let Some(k) = keys.get(grant.key.0 as usize) else {
                    return Outcome::Fail(ErrorKind::Other);
                };
                mutex::release(&mut self.session, k, &mut self.requests).await
            }
            Recipe::LockApi { .. } => {
                lockapi::release(
                    &mut self.session,
                    &grant.handle.lock_key,
                    &mut self.requests,
                )
                .await
            }
        };
        match result {
            Ok(true) if !self.session.lease_dead() => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => failed(e),
        }
    }

    async fn renew(&mut self, _grant: &Grant<EtcdHandle>) -> Outcome<()> {
        self.requests += 1;
        match self.session.keep_alive_once().await {
            Ok(ttl) if ttl > 0 => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => Outcome::Info(e.kind),
        }
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.requests)
    }

    async fn close(self) {
        self.session.close().await;
    }

    async fn abandon(self) {
        self.session.abandon().await;
    }
}
