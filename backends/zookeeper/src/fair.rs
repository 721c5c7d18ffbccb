//! **zk-fair**: the lock from the ZooKeeper recipes page, written out request by request so
//! that every request is counted.
//!
//! Lock node: `{root}/fair/k{key}/lock-{guid}-{sequence}`, created `EphemeralSequential`, where
//! `guid` is a random UUID per client (per session).
//!
//! Acquire:
//! 1. `create` the node. Its `Stat.czxid` (the zxid of the create) is the fencing token: it is
//!    unique and strictly increasing across the whole ensemble, and comes back with the create
//!    at no extra cost. If the create fails with `NoNode`, the persistent parents are created
//!    (`NodeExists` is fine) and the create is retried; trying the create first means a key
//!    whose parents exist, i.e. every key after its first use by anyone, costs nothing extra,
//!    so no per-client cache of "parents exist" is needed.
//! 2. `getChildren` *without* a watch. The lowest sequence holds the lock. Otherwise the client
//!    watches its **predecessor only** (the next lower sequence), so a release wakes exactly one
//!    waiter and there is no herd. The watch is set with `getData`, not `exists`: when the
//!    predecessor is already gone, `getData` fails with `NoNode` and leaves no watch behind,
//!    whereas `exists` would register a watch on a node that will never come back, which
//!    `zookeeper-client` then removes with an extra `RemoveWatches` request when the watcher is
//!    dropped (Curator uses `getData` for the same reason). On `NoNode` or on the watch
//!    firing, back to `getChildren`.
//!
//! Per uncontended acquisition: `create` + `getChildren`, and `delete` to release. A waiter
//! adds one `getData` and one `getChildren` per wake-up.
//!
//! `ConnectionLoss` during the create leaves the client not knowing whether its node exists
//! (ZOOKEEPER-22). The guid in the name answers it: the client lists the children and looks for
//! its own guid (the recovery lookup), reading the found node's `czxid` with one `exists`;
//! only if none is found does it create again. Reads that lose their connection are simply
//! retried (the crate queues requests while it reconnects). After [`MAX_CONNECTION_LOSSES`]
//! losses in one acquire it gives up with `info connection-lost`, and the runner then closes
//! the client, which deletes whatever the acquire left.
//!
//! Release is one `delete`; `NoNode` or an ended session means the lock had been lost
//! (`fail lock-lost`). A client whose session has already expired reports that without a
//! request. Renew is one `exists` on the client's own node.
//!
//! Hot path: the per-key parent and node-prefix strings are built when the client connects; an
//! acquire formats nothing (the create takes the precomputed prefix; the predecessor's path and
//! the own path for release are written into one reused buffer). The allocations left are the
//! crate's: the request buffers and the `Vec<String>` of children.

use crate::connect::{self, Ensemble};
use crate::counters;
use crate::errors::{acquire_failed, held_call_failed};
use crate::paths::{self, KeyTable};
use crate::tally::Tally;
use lockbench_core::scenario::ZookeeperKnobs;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, ErrorKind, FencingToken, Grant, KeyId,
    LockClient, Outcome, ServerCounters, ServerFanout, Wakeups,
};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use zookeeper_client as zk;

/// Connection losses tolerated within one acquire before it reports `info connection-lost`.
pub const MAX_CONNECTION_LOSSES: u32 = 3;

pub(crate) const EPHEMERAL_SEQUENTIAL: zk::CreateOptions<'static> =
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
const PERSISTENT: zk::CreateOptions<'static> =
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// The zk-fair recipe bound to an ensemble: makes [`ZkFairClient`]s.
#[derive(Debug)]
pub struct ZkFair {
    ensemble: Arc<Ensemble>,
    root: String,
    knobs: ZookeeperKnobs,
    keys: u32,
    tally: Tally,
}

impl ZkFair {
    /// A zk-fair backend on `endpoints.zookeeper`, with lock nodes under `{knobs.root}/fair`.
    /// `keys` is the scenario's key count (each client precomputes its paths for `0..keys`).
    /// `seed` is accepted for uniformity with the other backends; this recipe makes no random
    /// choice that a seed should fix (the per-client guid must be unique across runs, so it is
    /// not seeded).
    pub fn new(
        endpoints: &Endpoints,
        knobs: &ZookeeperKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<ZkFair, BackendError> {
        let _ = seed;
        let ensemble = Ensemble::new(endpoints, knobs)?;
        let root = paths::check_root(&knobs.root).map_err(BackendError::Config)?;
        Ok(ZkFair {
            ensemble: Arc::new(ensemble),
            root: root.to_string(),
            knobs: knobs.clone(),
            keys,
            tally: Tally::default(),
        })
    }
}

impl Backend for ZkFair {
    type Client = ZkFairClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: BackendKind::ZkFair,
            waits_by: "getData watch on the predecessor node only (a release wakes one waiter)"
                .into(),
            fencing: "czxid of the lock node".into(),
            knobs: knobs(&self.knobs),
        }
    }

    async fn connect(&self, client: ClientId) -> Result<ZkFairClient, BackendError> {
        let zk = self.ensemble.connect().await?;
        let guid = uuid::Uuid::new_v4().simple();
        let name_prefix = format!("lock-{guid}-");
        let base = format!("{}/fair", self.root);
        let keys = KeyTable::new(self.keys, |k| FairKey::new(&base, &name_prefix, k));
        tracing::debug!(%client, session = %zk.session_id(), "zk-fair client connected");
        Ok(ZkFairClient {
            id: client,
            zk,
            ensemble: self.ensemble.clone(),
            base,
            name_prefix,
            keys,
            scratch: String::with_capacity(256),
            requests: 0,
            notifications: Notifications::default(),
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

/// The knobs both ZooKeeper recipes report.
pub(crate) fn knobs(knobs: &ZookeeperKnobs) -> Vec<(String, String)> {
    vec![
        (
            "session_timeout".into(),
            format!("{:?}", knobs.session_timeout),
        ),
        ("root".into(), knobs.root.clone()),
    ]
}

/// Paths of one key, built once per client.
#[derive(Debug)]
pub(crate) struct FairKey {
    /// `{root}/fair/k{key}`: the directory whose children queue for the lock.
    pub(crate) parent: String,
    /// `{parent}/lock-{guid}-`: what the create appends the sequence to.
    pub(crate) prefix: String,
}

impl FairKey {
    pub(crate) fn new(base: &str, name_prefix: &str, key: u32) -> FairKey {
        let parent = format!("{base}/k{key}");
        let prefix = format!("{parent}/{name_prefix}");
        FairKey { parent, prefix }
    }
}

/// Counts watch notifications a client has received (one per wake-up while waiting). A cheap
/// clonable reader, so a workload can sample it while the client is blocked in `acquire`.
#[derive(Clone, Debug, Default)]
pub struct Notifications(Arc<AtomicU64>);

impl Notifications {
    /// Notifications received so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a zk-fair client keeps about a held lock: the sequence number of its node (the path
/// is rebuilt from the key's precomputed prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairHandle {
    sequence: i64,
}

impl FairHandle {
    /// The lock node's sequence number (its place in the key's queue).
    pub fn sequence(&self) -> i64 {
        self.sequence
    }
}

/// One zk-fair client: one ZooKeeper session.
///
/// A client waits for one lock at a time; asking for a key it already holds would queue it
/// behind itself. Dropping a client without [`LockClient::close`] behaves like
/// [`LockClient::abandon`] (the session is detached; see the crate docs).
#[derive(Debug)]
pub struct ZkFairClient {
    id: ClientId,
    zk: zk::Client,
    ensemble: Arc<Ensemble>,
    base: String,
    name_prefix: String,
    keys: KeyTable<FairKey>,
    scratch: String,
    requests: u64,
    notifications: Notifications,
    tally: Tally,
}

impl ZkFairClient {
    /// Watch notifications this client has received (one per wake-up while queued).
    pub fn notifications(&self) -> u64 {
        self.notifications.get()
    }

    /// This client's ZooKeeper session id (to find it in the servers' `cons` output).
    pub fn session_id(&self) -> i64 {
        self.zk.session_id().0
    }

    /// A reader of [`ZkFairClient::notifications`] that stays valid while the client is busy.
    pub fn notification_counter(&self) -> Notifications {
        self.notifications.clone()
    }

    /// `false` once the session has expired or been closed: every lock it held is gone.
    pub fn session_alive(&self) -> bool {
        !self.zk.state().is_terminated()
    }

    /// Fault injection: ends this client's session from outside while the client stays
    /// connected, as the ensemble does when a session times out (it re-attaches to the session
    /// with its id and password and closes it, as Curator's test utilities do). The lock nodes
    /// vanish at once; the client learns of it on its next reconnect, a moment later.
    pub async fn expire_session(&self) {
        connect::expire(&self.ensemble, &self.zk).await;
    }

    async fn acquire_inner(&mut self, key: KeyId) -> Outcome<Grant<FairHandle>> {
        let ZkFairClient {
            id,
            zk,
            base,
            name_prefix,
            keys,
            scratch,
            requests,
            notifications,
            tally,
            ..
        } = self;
        let paths = keys.get(key.0, |k| FairKey::new(base, name_prefix, k));
        // 1. Create the lock node (or find it again after a connection loss).
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

        // 2. Wait until no node with a lower sequence is left.
        let mut woken = false;
        loop {
            *requests += 1;
            if woken {
                tally.request();
            }
            let children = match zk.list_children(&paths.parent).await {
                Ok(children) => children,
                Err(zk::Error::ConnectionLoss) => {
                    if lost_connection() {
                        return Outcome::Info(ErrorKind::ConnectionLost);
                    }
                    continue;
                }
                Err(e) => return acquire_failed(&e),
            };
            let mut own = false;
            let mut predecessor: Option<(i64, &str)> = None;
            for name in &children {
                let Some(s) = paths::sequence_of(name) else {
                    continue;
                };
                if s == sequence {
                    own = name.starts_with(name_prefix.as_str());
                } else if s < sequence && predecessor.is_none_or(|(p, _)| s > p) {
                    predecessor = Some((s, name));
                }
            }
            if !own {
                if !zk.state().is_terminated() {
                    tracing::warn!(client = %id, key = %key, sequence,
                        "zk-fair: own lock node vanished while queued (deleted from outside?)");
                    return Outcome::Fail(ErrorKind::Other);
                }
                return Outcome::Fail(ErrorKind::SessionExpired);
            }
            // A wake-up is wasted when its re-check still finds a predecessor.
            let reacting = std::mem::take(&mut woken);
            if predecessor.is_some() && reacting {
                tally.wasted();
            }
            let Some((_, name)) = predecessor else {
                return Outcome::Ok(Grant {
                    key,
                    token: Some(FencingToken(czxid as u64)),
                    handle: FairHandle { sequence },
                });
            };
            scratch.clear();
            scratch.push_str(&paths.parent);
            scratch.push('/');
            scratch.push_str(name);
            if name.starts_with(name_prefix.as_str()) {
                // An older node of this very session (a create that took effect although its
                // answer was lost, ZOOKEEPER-22): waiting on it would wait forever.
                *requests += 1;
                match zk.delete(scratch, None).await {
                    Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::ConnectionLoss) => continue,
                    Err(e) => return acquire_failed(&e),
                }
            }
            *requests += 1;
            if reacting {
                tally.request();
            }
            match zk.get_and_watch_data(scratch).await {
                Err(zk::Error::NoNode) => continue,
                Err(zk::Error::ConnectionLoss) => {
                    if lost_connection() {
                        return Outcome::Info(ErrorKind::ConnectionLost);
                    }
                    continue;
                }
                Err(e) => return acquire_failed(&e),
                Ok((_, _, watcher)) => {
                    let event = watcher.changed().await;
                    notifications.bump();
                    tally.notification();
                    woken = true;
                    if event.event_type == zk::EventType::Session {
                        // One-shot watchers see only terminal session states.
                        return Outcome::Fail(ErrorKind::SessionExpired);
                    }
                }
            }
        }
    }

    /// Writes this client's node path for `key` and `sequence` into the scratch buffer.
    fn own_path(&mut self, key: KeyId, sequence: i64) -> &str {
        let ZkFairClient {
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

/// Appends a sequence number the way ZooKeeper names sequential nodes (10 digits, or 19 past
/// `i32::MAX`).
pub(crate) fn write_sequence(out: &mut String, sequence: i64) {
    if sequence <= i64::from(i32::MAX) {
        let _ = write!(out, "{sequence:010}");
    } else {
        let _ = write!(out, "{sequence:019}");
    }
}

/// Creates the persistent ancestors of `parent`, top down; `NodeExists` is fine.
pub(crate) async fn make_parents(
    zk: &zk::Client,
    parent: &str,
    requests: &mut u64,
) -> Result<(), zk::Error> {
    for (i, _) in parent.match_indices('/').skip(1) {
        *requests += 1;
        create_dir(zk, &parent[..i]).await?;
    }
    *requests += 1;
    create_dir(zk, parent).await
}

async fn create_dir(zk: &zk::Client, path: &str) -> Result<(), zk::Error> {
    match zk.create(path, b"", &PERSISTENT).await {
        Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The recovery lookup after a `ConnectionLoss` during the create: this client's node for the
/// key, found by its guid, with its `czxid`.
/// Step 1 of both ZooKeeper queue recipes (zk-fair, zk-herd): creates this client's
/// ephemeral-sequential node, making missing parents once, and after a connection loss finds
/// it again by the GUID in its name instead of creating a second one. Returns its `czxid` and
/// sequence. Gives up with `ConnectionLoss` after [`MAX_CONNECTION_LOSSES`] losses (counted in
/// `losses`, which the caller's wait step goes on counting).
pub(crate) async fn create_or_find(
    zk: &zk::Client,
    paths: &FairKey,
    name_prefix: &str,
    scratch: &mut String,
    requests: &mut u64,
    losses: &mut u32,
) -> Result<(i64, i64), zk::Error> {
    let mut made_parents = false;
    let mut look_for_own = false;
    loop {
        let error = if look_for_own {
            match find_own(zk, paths, name_prefix, scratch, requests).await {
                Ok(Some(found)) => return Ok(found),
                Ok(None) => {
                    look_for_own = false;
                    continue;
                }
                Err(e) => e,
            }
        } else {
            *requests += 1;
            match zk.create(&paths.prefix, b"", &EPHEMERAL_SEQUENTIAL).await {
                Ok((stat, sequence)) => return Ok((stat.czxid, sequence.into_i64())),
                Err(zk::Error::NoNode) if !made_parents => {
                    made_parents = true;
                    make_parents(zk, &paths.parent, requests).await?;
                    continue;
                }
                Err(e) => e,
            }
        };
        if error != zk::Error::ConnectionLoss {
            return Err(error);
        }
        *losses += 1;
        if *losses > MAX_CONNECTION_LOSSES {
            return Err(error);
        }
        look_for_own = true;
    }
}

pub(crate) async fn find_own(
    zk: &zk::Client,
    paths: &FairKey,
    name_prefix: &str,
    scratch: &mut String,
    requests: &mut u64,
) -> Result<Option<(i64, i64)>, zk::Error> {
    *requests += 1;
    let children = zk.list_children(&paths.parent).await?;
    let Some((name, sequence)) = children
        .iter()
        .filter(|name| name.starts_with(name_prefix))
        .filter_map(|name| Some((name, paths::sequence_of(name)?)))
        .max_by_key(|(_, s)| *s)
    else {
        return Ok(None);
    };
    scratch.clear();
    scratch.push_str(&paths.parent);
    scratch.push('/');
    scratch.push_str(name);
    *requests += 1;
    Ok(zk
        .check_stat(scratch)
        .await?
        .map(|stat| (stat.czxid, sequence)))
}

impl LockClient for ZkFairClient {
    type Handle = FairHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<FairHandle>> {
        self.acquire_inner(key).await
    }

    async fn release(&mut self, grant: Grant<FairHandle>) -> Outcome<()> {
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

    async fn renew(&mut self, grant: &Grant<FairHandle>) -> Outcome<()> {
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
        tracing::debug!(client = %self.id, "zk-fair client closing");
        connect::close(&self.ensemble, self.zk).await;
    }

    async fn abandon(self) {
        tracing::debug!(client = %self.id, "zk-fair client abandoned");
        connect::abandon(self.zk).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_formatting_matches_zookeeper() {
        let mut s = String::new();
        write_sequence(&mut s, 42);
        assert_eq!(s, "0000000042");
        s.clear();
        write_sequence(&mut s, i64::from(i32::MAX) + 1);
        assert_eq!(s, "0000000002147483648");
    }

    #[test]
    fn key_paths() {
        let k = FairKey::new("/lockbench/fair", "lock-abc-", 3);
        assert_eq!(k.parent, "/lockbench/fair/k3");
        assert_eq!(k.prefix, "/lockbench/fair/k3/lock-abc-");
    }
}
