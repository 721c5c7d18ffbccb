//! **zk-herd**: a deliberately naive ZooKeeper lock, the herd effect that the recipes page
//! warns about, kept so that lockbench can *measure* the fan-out `zk-fair` avoids.
//!
//! Lock node: `{root}/herd/k{key}/lock-{guid}-{sequence}`, created `EphemeralSequential` exactly
//! as zk-fair does (same create, same `ConnectionLoss` recovery, same fencing token: the
//! node's `czxid`). Only the wait differs: instead of watching its predecessor, every waiter
//! lists the lock directory's children **with a watch** and, on any change, lists again. So
//! every create and every delete in the directory (a release, a newcomer queueing) wakes every
//! waiter: a release with N waiters costs N notifications and N `getChildren`, of which N - 1
//! are wasted (the client still is not first).
//!
//! Per acquisition: `create` + `getChildren`-with-watch + `delete`; when the client is first at
//! once, the watch it just set is no longer wanted and `zookeeper-client` removes it with one
//! `RemoveWatches` when the watcher is dropped, which is counted too. Each wake-up adds one
//! `getChildren`.
//!
//! Counting: the backend's [`Tally`] counts notifications as the library hands them over,
//! wasted wake-ups, and the requests sent in reaction to a notification.

use crate::connect::{self, Ensemble};
use crate::counters;
use crate::errors::{acquire_failed, held_call_failed};
use crate::fair::{FairKey, MAX_CONNECTION_LOSSES, create_or_find, knobs, write_sequence};
use crate::paths::{self, KeyTable};
use crate::tally::Tally;
use lockbench_core::scenario::ZookeeperKnobs;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, ErrorKind, FencingToken, Grant, KeyId,
    LockClient, Outcome, ServerCounters, ServerFanout, Wakeups,
};
use std::sync::Arc;
use zookeeper_client as zk;

/// The zk-herd recipe bound to an ensemble: makes [`ZkHerdClient`]s.
#[derive(Debug)]
pub struct ZkHerd {
    ensemble: Arc<Ensemble>,
    root: String,
    knobs: ZookeeperKnobs,
    keys: u32,
    tally: Tally,
}

impl ZkHerd {
    /// A zk-herd backend on `endpoints.zookeeper`, with lock nodes under `{knobs.root}/herd`.
    /// `keys` and `seed` as for [`ZkFair::new`](crate::ZkFair::new).
    pub fn new(
        endpoints: &Endpoints,
        knobs: &ZookeeperKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<ZkHerd, BackendError> {
        let _ = seed;
        let ensemble = Ensemble::new(endpoints, knobs)?;
        let root = paths::check_root(&knobs.root).map_err(BackendError::Config)?;
        Ok(ZkHerd {
            ensemble: Arc::new(ensemble),
            root: root.to_string(),
            knobs: knobs.clone(),
            keys,
            tally: Tally::default(),
        })
    }
}

impl Backend for ZkHerd {
    type Client = ZkHerdClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: BackendKind::ZkHerd,
            waits_by: "getChildren watch on the lock directory (a release wakes every waiter)"
                .into(),
            fencing: "czxid of the lock node".into(),
            knobs: knobs(&self.knobs),
        }
    }

    async fn connect(&self, client: ClientId) -> Result<ZkHerdClient, BackendError> {
        let zk = self.ensemble.connect().await?;
        let guid = uuid::Uuid::new_v4().simple();
        let name_prefix = format!("lock-{guid}-");
        let base = format!("{}/herd", self.root);
        let keys = KeyTable::new(self.keys, |k| FairKey::new(&base, &name_prefix, k));
        tracing::debug!(%client, session = %zk.session_id(), "zk-herd client connected");
        Ok(ZkHerdClient {
            id: client,
            zk,
            ensemble: self.ensemble.clone(),
            base,
            name_prefix,
            keys,
            scratch: String::with_capacity(256),
            requests: 0,
            tally: self.tally.clone(),
        })
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        counters::packets_received(&self.ensemble.members).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Some(self.tally.read())
    }

    async fn server_fanout(&self) -> Result<Option<ServerFanout>, String> {
        counters::watch_notifications(&self.ensemble.members)
            .await
            .map(Some)
    }
}

/// What a zk-herd client keeps about a held lock: its node's sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HerdHandle {
    sequence: i64,
}

/// One zk-herd client: one ZooKeeper session (see [`ZkFairClient`](crate::ZkFairClient) for
/// the session rules, which are the same).
#[derive(Debug)]
pub struct ZkHerdClient {
    id: ClientId,
    zk: zk::Client,
    ensemble: Arc<Ensemble>,
    base: String,
    name_prefix: String,
    keys: KeyTable<FairKey>,
    scratch: String,
    requests: u64,
    tally: Tally,
}

impl ZkHerdClient {
    /// This client's ZooKeeper session id (to find it in the servers' `cons` output).
    pub fn session_id(&self) -> i64 {
        self.zk.session_id().0
    }

    async fn acquire_inner(&mut self, key: KeyId) -> Outcome<Grant<HerdHandle>> {
        let ZkHerdClient {
            id,
            zk,
            base,
            name_prefix,
            keys,
            scratch,
            requests,
            tally,
            ..
        } = self;
        let paths = keys.get(key.0, |k| FairKey::new(base, name_prefix, k));

        // 1. Create the lock node (or find it again after a connection loss), as zk-fair.
        let mut losses = 0u32;
        let (czxid, sequence) =
            match create_or_find(zk, paths, name_prefix, scratch, requests, &mut losses).await {
                Ok(found) => found,
                Err(e) => return acquire_failed(&e),
            };
        let mut lost_connection = || {
            losses += 1;
            losses > MAX_CONNECTION_LOSSES
        };

        // 2. List the children with a watch until no lower sequence is left; every change in
        //    the directory wakes this client (and every other waiter).
        let mut woken = false;
        loop {
            *requests += 1;
            let reacting = std::mem::take(&mut woken);
            if reacting {
                tally.request();
            }
            let (children, watcher) = match zk.list_and_watch_children(&paths.parent).await {
                Ok(found) => found,
                Err(zk::Error::ConnectionLoss) => {
                    if lost_connection() {
                        return Outcome::Info(ErrorKind::ConnectionLost);
                    }
                    woken = reacting;
                    continue;
                }
                Err(e) => return acquire_failed(&e),
            };
            let mut own = false;
            let mut first = true;
            let mut older_own: Option<&str> = None;
            for name in &children {
                let Some(s) = paths::sequence_of(name) else {
                    continue;
                };
                if s == sequence {
                    own = name.starts_with(name_prefix.as_str());
                } else if s < sequence {
                    first = false;
                    if name.starts_with(name_prefix.as_str()) {
                        older_own = Some(name);
                    }
                }
            }
            if !own {
                drop(watcher);
                if !zk.state().is_terminated() {
                    tracing::warn!(client = %id, key = %key, sequence,
                        "zk-herd: own lock node vanished while queued (deleted from outside?)");
                    return Outcome::Fail(ErrorKind::Other);
                }
                return Outcome::Fail(ErrorKind::SessionExpired);
            }
            if first {
                // The watch just set is not wanted any more: dropping the watcher makes the
                // library send one RemoveWatches.
                drop(watcher);
                *requests += 1;
                if reacting {
                    tally.request();
                }
                return Outcome::Ok(Grant {
                    key,
                    token: Some(FencingToken(czxid as u64)),
                    handle: HerdHandle { sequence },
                });
            }
            if reacting {
                tally.wasted();
            }
            if let Some(name) = older_own {
                // An older node of this very session (ZOOKEEPER-22), as in zk-fair.
                scratch.clear();
                scratch.push_str(&paths.parent);
                scratch.push('/');
                scratch.push_str(name);
                *requests += 1;
                match zk.delete(scratch, None).await {
                    Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::ConnectionLoss) => {}
                    Err(e) => return acquire_failed(&e),
                }
            }
            let event = watcher.changed().await;
            tally.notification();
            woken = true;
            if event.event_type == zk::EventType::Session {
                return Outcome::Fail(ErrorKind::SessionExpired);
            }
        }
    }

    fn own_path(&mut self, key: KeyId, sequence: i64) -> &str {
        let ZkHerdClient {
            base,
            name_prefix,
            keys,
            scratch,
            ..
        } = self;
        let paths = keys.get(key.0, |k| FairKey::new(base, name_prefix, k));
        scratch.clear();
        scratch.push_str(&paths.prefix);
        write_sequence(scratch, sequence);
        scratch
    }
}

impl LockClient for ZkHerdClient {
    type Handle = HerdHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<HerdHandle>> {
        self.acquire_inner(key).await
    }

    async fn release(&mut self, grant: Grant<HerdHandle>) -> Outcome<()> {
        if self.zk.state().is_terminated() {
            return Outcome::Fail(ErrorKind::LockLost);
        }
        self.own_path(grant.key, grant.handle.sequence);
        self.requests += 1;
        match self.zk.delete(&self.scratch, None).await {
            Ok(()) => Outcome::Ok(()),
            Err(e) => held_call_failed(&e),
        }
    }

    async fn renew(&mut self, grant: &Grant<HerdHandle>) -> Outcome<()> {
        if self.zk.state().is_terminated() {
            return Outcome::Fail(ErrorKind::LockLost);
        }
        self.own_path(grant.key, grant.handle.sequence);
        self.requests += 1;
        match self.zk.check_stat(&self.scratch).await {
            Ok(Some(_)) => Outcome::Ok(()),
            Ok(None) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => held_call_failed(&e),
        }
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.requests)
    }

    async fn close(self) {
        tracing::debug!(client = %self.id, "zk-herd client closing");
        connect::close(&self.ensemble, self.zk).await;
    }

    async fn abandon(self) {
        tracing::debug!(client = %self.id, "zk-herd client abandoned");
        connect::abandon(self.zk).await;
    }
}
