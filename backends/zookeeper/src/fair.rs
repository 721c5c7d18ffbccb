//! **zk-fair**, **zk-herd** and **zk-rwlock**: the ephemeral-sequential queue from the
//! ZooKeeper recipes page, written out request by request so that every request is counted.
//! The three differ only in *values* ([`Queue`]): which directory, whether shared (read) nodes
//! exist, and how a waiter waits ([`WaitStrategy`]). One client implementation runs all three,
//! so the herd comparison measures the wait and nothing else. A fourth value,
//! **zk-broken-rwlock** ([`Queue::BROKEN_RWLOCK`]), is zk-rwlock with one rule left out on
//! purpose (its writers do not wait for read nodes), to prove the shared-lock checker alive.
//!
//! Lock node: `{root}/{fair|herd|rwlock}/k{key}/{kind}-{guid}-{sequence}`, created
//! `EphemeralSequential`, where `guid` is 32 hex digits per client (per session): the client id
//! (8 hex digits, so the server-side observer can name the holder, `observe`) and 24 random
//! ones, and `kind` is `lock` (zk-fair, zk-herd), or `write` / `read` (zk-rwlock).
//!
//! **Who blocks whom** (one rule for all three): a node with a lower sequence blocks mine
//! unless both are `read` nodes. So an exclusive or write node waits for every lower node, and
//! a read node waits only for the lower *write* nodes: readers queued together hold together,
//! which is the shared lock of the recipes page. zk-fair and zk-herd only ever create `lock`
//! nodes, so for them it is the plain mutex. zk-broken-rwlock breaks the rule for writers: a
//! write node waits only for lower *write* nodes, so a writer is granted while readers hold.
//!
//! Acquire:
//! 1. `create` the node. Its `Stat.czxid` (the zxid of the create) is the fencing token: it is
//!    unique and strictly increasing across the whole ensemble, and comes back with the create
//!    at no extra cost. If the create fails with `NoNode`, the persistent parents are created
//!    (`NodeExists` is fine) and the create is retried; trying the create first means a key
//!    whose parents exist, i.e. every key after its first use by anyone, costs nothing extra,
//!    so no per-client cache of "parents exist" is needed.
//! 2. Wait until no node blocks this one:
//!    - [`WaitStrategy::Predecessor`] (zk-fair, zk-rwlock): `getChildren` *without* a watch;
//!      then watch only the **nearest blocking node** (the next lower node; for a reader the
//!      next lower write node), so a release wakes exactly the waiters it unblocks: one writer,
//!      or the readers queued behind it, never the whole queue. The watch is set with
//!      `getData`, not `exists`: when the node is already gone, `getData` fails with `NoNode`
//!      and leaves no watch behind, whereas `exists` would register a watch on a node that will
//!      never come back, which `zookeeper-client` then removes with an extra `RemoveWatches`
//!      request when the watcher is dropped (Curator uses `getData` for the same reason). On
//!      `NoNode` or on the watch firing, back to `getChildren`.
//!    - [`WaitStrategy::Children`] (zk-herd, deliberately naive): `getChildren` **with a
//!      watch**, and on any change, list again. Every create and delete in the directory (a
//!      release, a newcomer queueing) wakes every waiter: a release with N waiters costs N
//!      notifications and N `getChildren`, of which N - 1 are wasted. When the client is first
//!      at once, the watch it just set is not wanted and `zookeeper-client` removes it with one
//!      `RemoveWatches` when the watcher is dropped, which is counted too.
//!
//! Per uncontended acquisition (zk-fair): `create` + `getChildren`, and `delete` to release. A
//! waiter adds one `getData` and one `getChildren` per wake-up.
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
//! Counting: the backend's [`WakeupTally`] counts notifications as the library hands them over,
//! wasted wake-ups (the re-check still found a blocking node), and the requests sent in
//! reaction to a notification.
//!
//! Hot path: the per-key parent and node-prefix strings are built when the client connects; an
//! acquire formats nothing (the create takes the precomputed prefix; the predecessor's path and
//! the own path for release are written into one reused buffer). The allocations left are the
//! crate's: the request buffers and the `Vec<String>` of children.

use crate::connect::{self, Ensemble};
use crate::counters;
use crate::errors::{acquire_failed, held_call_failed};
use crate::observe;
use crate::paths::{self, KeyTable};

use crate::ZookeeperKnobs;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, ErrorKind, FencingToken, Grant, KeyId,
    LockClient, Outcome, ServerCounters, ServerFanout, WakeupTally, Wakeups,
};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use zookeeper_client as zk;

/// Connection losses tolerated within one acquire before it reports `info connection-lost`.
pub const MAX_CONNECTION_LOSSES: u32 = 3;

/// A lock node's create options, with the ensemble's ACL (`Ensemble::acls`).
pub(crate) const fn ephemeral_sequential(acls: zk::Acls<'static>) -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(acls)
}

/// A lock directory's create options, with the ensemble's ACL.
pub(crate) const fn persistent(acls: zk::Acls<'static>) -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(acls)
}

/// How a queued client learns that it may be first now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Watch only the nearest node that blocks this one (zk-fair, zk-rwlock): a release wakes
    /// only the waiters it unblocks.
    Predecessor,
    /// Watch the lock directory's children (zk-herd): every change wakes every waiter.
    Children,
}

/// Which of the queue recipes a [`ZkFair`] backend runs: everything that differs between
/// zk-fair, zk-herd and zk-rwlock, as values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queue {
    /// The recipe's name in results.
    pub kind: BackendKind,
    /// How waiters wait.
    pub wait: WaitStrategy,
    /// The directory under the root (`fair`, `herd`, `rwlock`): recipes never share nodes.
    pub dir: &'static str,
    /// Whether [`LockClient::acquire_shared`] creates `read` nodes that may hold together;
    /// otherwise a shared acquire is an exclusive one.
    pub shared: bool,
    /// Whether an exclusive (write) node waits for lower `read` nodes too, as the recipe
    /// requires. `false` only for the deliberately broken zk-broken-rwlock.
    pub writers_wait_for_readers: bool,
}

impl Queue {
    /// zk-fair: exclusive, predecessor watch.
    pub const FAIR: Queue = Queue {
        kind: crate::recipes::ZK_FAIR,
        wait: WaitStrategy::Predecessor,
        dir: "fair",
        shared: false,
        writers_wait_for_readers: true,
    };
    /// zk-herd: exclusive, children watch (the herd effect, on purpose).
    pub const HERD: Queue = Queue {
        kind: crate::recipes::ZK_HERD,
        wait: WaitStrategy::Children,
        dir: "herd",
        shared: false,
        writers_wait_for_readers: true,
    };
    /// zk-rwlock: the shared (read/write) lock of the recipes page, predecessor watch.
    pub const RWLOCK: Queue = Queue {
        kind: crate::recipes::ZK_RWLOCK,
        wait: WaitStrategy::Predecessor,
        dir: "rwlock",
        shared: true,
        writers_wait_for_readers: true,
    };
    /// zk-broken-rwlock, deliberately broken: zk-rwlock whose writers ignore read nodes (a
    /// writer waits for the lower write nodes only), so a writer holds beside readers. Exists
    /// to prove the shared-lock checker catches it; never part of a comparison.
    pub const BROKEN_RWLOCK: Queue = Queue {
        kind: crate::recipes::ZK_BROKEN_RWLOCK,
        wait: WaitStrategy::Predecessor,
        dir: "broken-rwlock",
        shared: true,
        writers_wait_for_readers: false,
    };

    /// The queue recipe named `kind` (`zk-fair`, `zk-herd`, `zk-rwlock`,
    /// `zk-broken-rwlock`); `None` for any other backend.
    pub fn of(kind: BackendKind) -> Option<Queue> {
        [
            Queue::FAIR,
            Queue::HERD,
            Queue::RWLOCK,
            Queue::BROKEN_RWLOCK,
        ]
        .into_iter()
        .find(|q| q.kind == kind)
    }

    fn exclusive_name(self) -> &'static str {
        if self.shared { "write" } else { "lock" }
    }

    fn waits_by(self) -> &'static str {
        if !self.writers_wait_for_readers {
            return "getData watch on the nearest blocking node; deliberately broken: a writer \
                    waits for lower write nodes only, so it is granted while readers hold";
        }
        match (self.wait, self.shared) {
            (WaitStrategy::Children, _) => {
                "getChildren watch on the lock directory (a release wakes every waiter)"
            }
            (WaitStrategy::Predecessor, false) => {
                "getData watch on the predecessor node only (a release wakes one waiter)"
            }
            (WaitStrategy::Predecessor, true) => {
                "getData watch on the nearest blocking node: a writer on the next lower node, a \
                 reader on the next lower write node (a write release wakes the readers behind it)"
            }
        }
    }
}

/// A ZooKeeper queue recipe bound to an ensemble: makes [`ZkFairClient`]s. Runs zk-fair by
/// default; [`ZkFair::with_queue`] picks zk-herd or zk-rwlock.
#[derive(Debug)]
pub struct ZkFair {
    ensemble: Arc<Ensemble>,
    root: String,
    knobs: ZookeeperKnobs,
    keys: u32,
    tally: WakeupTally,
    queue: Queue,
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
            tally: WakeupTally::default(),
            queue: Queue::FAIR,
        })
    }

    /// The same backend running another queue recipe ([`Queue::HERD`], [`Queue::RWLOCK`]).
    pub fn with_queue(mut self, queue: Queue) -> ZkFair {
        self.queue = queue;
        self
    }
}

impl Backend for ZkFair {
    type Client = ZkFairClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: self.queue.kind,
            waits_by: self.queue.waits_by().into(),
            fencing: "czxid of the lock node".into(),
            knobs: knobs(&self.knobs),
        }
    }

    /// With a digest user: that it may create, list and delete under `root`
    /// (`crate::secure::check_permissions`), naming the permission it lacks.
    async fn check_servers(&self) -> Result<(), BackendError> {
        match self.ensemble.user() {
            Some(_) => crate::secure::check_permissions(&self.ensemble, &self.root).await,
            None => Ok(()),
        }
    }

    async fn connect(&self, client: ClientId) -> Result<ZkFairClient, BackendError> {
        let zk = self.ensemble.connect().await?;
        let guid = guid(client);
        let names = Names {
            exclusive: format!("{}-{guid}-", self.queue.exclusive_name()),
            shared: format!("read-{guid}-"),
        };
        let base = format!("{}/{}", self.root, self.queue.dir);
        let keys = KeyTable::new(self.keys, |k| FairKey::new(&base, &names, k));
        tracing::debug!(%client, session = %zk.session_id(), recipe = %self.queue.kind, "zookeeper client connected");
        Ok(ZkFairClient {
            id: client,
            zk,
            ensemble: self.ensemble.clone(),
            queue: self.queue,
            base,
            names,
            keys,
            scratch: String::with_capacity(256),
            requests: 0,
            notifications: Notifications::default(),
            tally: self.tally.clone(),
        })
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        counters::packets_received(&self.ensemble.members, self.ensemble.tls.as_ref()).await
    }

    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        if self.queue.shared {
            return Err(format!(
                "{}: a shared lock's holders are not one client; not observed",
                self.queue.kind
            ));
        }
        let dir = format!("{}/{}", self.root, self.queue.dir);
        let naming = observe::Naming::ClientInName("lock-");
        observe::observe(&self.ensemble, dir, keys, naming, clock, sink).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Some(self.tally.read())
    }

    async fn server_fanout(&self) -> Result<Option<ServerFanout>, String> {
        counters::watch_notifications(&self.ensemble.members, self.ensemble.tls.as_ref())
            .await
            .map(Some)
    }
}

/// A client's node-name guid: its id as 8 hex digits, then 24 random hex digits (96 bits from
/// a v4 UUID), unique across runs and naming the client to whoever lists the queue.
fn guid(client: ClientId) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    let id = lockbench_core::server_view::client_hex(client);
    let mut guid = String::with_capacity(32);
    guid.push_str(std::str::from_utf8(&id).expect("hex digits"));
    guid.push_str(&random[8..]);
    guid
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

/// A client's node-name prefixes: `{lock|write}-{guid}-` and `read-{guid}-`.
#[derive(Debug)]
pub(crate) struct Names {
    exclusive: String,
    shared: String,
}

impl Names {
    fn get(&self, shared: bool) -> &str {
        if shared {
            &self.shared
        } else {
            &self.exclusive
        }
    }

    /// Whether `name` is one of this client's nodes (either kind).
    fn is_mine(&self, name: &str) -> bool {
        name.starts_with(self.exclusive.as_str()) || name.starts_with(self.shared.as_str())
    }
}

/// Whether a node named `name` is a shared (read) node.
fn is_read(name: &str) -> bool {
    name.starts_with("read-")
}

/// Paths of one key, built once per client.
#[derive(Debug)]
pub(crate) struct FairKey {
    /// `{root}/{dir}/k{key}`: the directory whose children queue for the lock.
    pub(crate) parent: String,
    /// `{parent}/{lock|write}-{guid}-`: what an exclusive create appends the sequence to.
    pub(crate) prefix: String,
    /// `{parent}/read-{guid}-`: the same for a shared create (zk-rwlock).
    pub(crate) shared_prefix: String,
}

impl FairKey {
    fn new(base: &str, names: &Names, key: u32) -> FairKey {
        let parent = format!("{base}/k{key}");
        let prefix = format!("{parent}/{}", names.exclusive);
        let shared_prefix = format!("{parent}/{}", names.shared);
        FairKey {
            parent,
            prefix,
            shared_prefix,
        }
    }

    fn prefix(&self, shared: bool) -> &str {
        if shared {
            &self.shared_prefix
        } else {
            &self.prefix
        }
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

/// What a client keeps about a held lock: the sequence number of its node and whether it is a
/// shared (read) node (the path is rebuilt from the key's precomputed prefixes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairHandle {
    sequence: i64,
    shared: bool,
}

impl FairHandle {
    /// The lock node's sequence number (its place in the key's queue).
    pub fn sequence(&self) -> i64 {
        self.sequence
    }

    /// Whether the grant is a shared (read) hold.
    pub fn shared(&self) -> bool {
        self.shared
    }
}

/// One client of a ZooKeeper queue recipe: one ZooKeeper session.
///
/// A client waits for one lock at a time; asking for a key it already holds would queue it
/// behind itself. Dropping a client without [`LockClient::close`] behaves like
/// [`LockClient::abandon`] (the session is detached; see the crate docs).
#[derive(Debug)]
pub struct ZkFairClient {
    id: ClientId,
    zk: zk::Client,
    ensemble: Arc<Ensemble>,
    queue: Queue,
    base: String,
    names: Names,
    keys: KeyTable<FairKey>,
    scratch: String,
    requests: u64,
    notifications: Notifications,
    tally: WakeupTally,
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

    async fn acquire_inner(&mut self, key: KeyId, shared: bool) -> Outcome<Grant<FairHandle>> {
        let shared = shared && self.queue.shared;
        let ZkFairClient {
            id,
            zk,
            ensemble,
            queue,
            base,
            names,
            keys,
            scratch,
            requests,
            notifications,
            tally,
            ..
        } = self;
        let paths = keys.get(key.0, |k| FairKey::new(base, names, k));
        let node = NodeName {
            parent: &paths.parent,
            prefix: paths.prefix(shared),
            name_prefix: names.get(shared),
            acls: ensemble.acls,
        };
        // 1. Create the lock node (or find it again after a connection loss).
        let mut losses = 0u32;
        let (czxid, sequence) =
            match create_or_find(zk, &node, scratch, requests, &mut losses).await {
                Ok(found) => found,
                Err(e) => return acquire_failed(&e),
            };
        let mut lost_connection = || {
            losses += 1;
            losses > MAX_CONNECTION_LOSSES
        };
        let children_watch = queue.wait == WaitStrategy::Children;
        // Whether a lower read node blocks this one: never for a reader; for a writer, unless
        // the recipe is the deliberately broken one.
        let readers_block = !shared && queue.writers_wait_for_readers;

        // 2. Wait until no node blocks this one.
        let mut woken = false;
        loop {
            *requests += 1;
            let reacting = std::mem::take(&mut woken);
            if reacting {
                tally.request();
            }
            let listed = if children_watch {
                zk.list_and_watch_children(&paths.parent)
                    .await
                    .map(|(children, watcher)| (children, Some(watcher)))
            } else {
                zk.list_children(&paths.parent).await.map(|c| (c, None))
            };
            let (children, children_watcher) = match listed {
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
            let Queued {
                own,
                blocker,
                older_own,
            } = Queued::scan(&children, sequence, node.name_prefix, names, readers_block);
            if !own {
                return vanished(zk, id, key, sequence, queue);
            }
            // A wake-up is wasted when its re-check still finds a blocking node.
            if blocker.is_some() && reacting {
                tally.wasted();
            }
            if blocker.is_none() {
                if children_watcher.is_some() {
                    // The watch just set is not wanted any more: dropping the watcher makes
                    // the library send one RemoveWatches.
                    drop(children_watcher);
                    *requests += 1;
                    if reacting {
                        tally.request();
                    }
                }
                return Outcome::Ok(Grant {
                    key,
                    token: Some(FencingToken(czxid as u64)),
                    handle: FairHandle { sequence, shared },
                });
            }
            if let Some(name) = older_own {
                // An older node of this very session (a create that took effect although its
                // answer was lost, ZOOKEEPER-22): waiting on it would wait forever.
                *requests += 1;
                match zk
                    .delete(child_path(scratch, &paths.parent, name), None)
                    .await
                {
                    Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::ConnectionLoss) => {
                        if children_watcher.is_none() {
                            continue;
                        }
                    }
                    Err(e) => return acquire_failed(&e),
                }
            }
            let event = match children_watcher {
                Some(watcher) => watcher.changed().await,
                None => {
                    let (_, name) = blocker.expect("checked above");
                    *requests += 1;
                    if reacting {
                        tally.request();
                    }
                    match zk
                        .get_and_watch_data(child_path(scratch, &paths.parent, name))
                        .await
                    {
                        Err(zk::Error::NoNode) => continue,
                        Err(zk::Error::ConnectionLoss) => {
                            if lost_connection() {
                                return Outcome::Info(ErrorKind::ConnectionLost);
                            }
                            continue;
                        }
                        Err(e) => return acquire_failed(&e),
                        Ok((_, _, watcher)) => watcher.changed().await,
                    }
                }
            };
            notifications.bump();
            tally.notification();
            woken = true;
            if event.event_type == zk::EventType::Session {
                // One-shot watchers see only terminal session states.
                return Outcome::Fail(ErrorKind::SessionExpired);
            }
        }
    }

    /// Writes this client's node path for `key` and `handle` into the scratch buffer.
    fn own_path(&mut self, key: KeyId, handle: FairHandle) -> &str {
        let ZkFairClient {
            base,
            names,
            keys,
            scratch,
            ..
        } = self;
        let paths = keys.get(key.0, |k| FairKey::new(base, names, k));
        scratch.clear();
        scratch.push_str(paths.prefix(handle.shared));
        write_sequence(scratch, handle.sequence);
        scratch
    }
}

/// What one listing of a key's queue says about this client's node (sequence `sequence`).
struct Queued<'a> {
    /// The node is still there.
    own: bool,
    /// The nearest older node that blocks it (any node, or for a shared node, and for a
    /// zk-broken-rwlock writer, a write node).
    blocker: Option<(i64, &'a str)>,
    /// An older node of this very session, if any.
    older_own: Option<&'a str>,
}

impl<'a> Queued<'a> {
    fn scan(
        children: &'a [String],
        sequence: i64,
        name_prefix: &str,
        names: &Names,
        readers_block: bool,
    ) -> Queued<'a> {
        let mut queued = Queued {
            own: false,
            blocker: None,
            older_own: None,
        };
        for name in children {
            let Some(s) = paths::sequence_of(name) else {
                continue;
            };
            if s == sequence {
                queued.own = name.starts_with(name_prefix);
            } else if s < sequence {
                if names.is_mine(name) {
                    queued.older_own = Some(name);
                }
                let blocks = readers_block || !is_read(name);
                if blocks && queued.blocker.is_none_or(|(p, _)| s > p) {
                    queued.blocker = Some((s, name));
                }
            }
        }
        queued
    }
}

/// The outcome when this client's queued node is gone: its session ended, or someone deleted
/// it from outside (logged: the lock's queue is no longer what this client believes).
fn vanished<T>(
    zk: &zk::Client,
    id: &ClientId,
    key: KeyId,
    sequence: i64,
    queue: &Queue,
) -> Outcome<T> {
    if !zk.state().is_terminated() {
        tracing::warn!(client = %id, key = %key, sequence, recipe = %queue.kind,
            "zookeeper: own lock node vanished while queued (deleted from outside?)");
        return Outcome::Fail(ErrorKind::Other);
    }
    Outcome::Fail(ErrorKind::SessionExpired)
}

/// `{parent}/{name}`, written into `scratch`.
fn child_path<'s>(scratch: &'s mut String, parent: &str, name: &str) -> &'s str {
    scratch.clear();
    scratch.push_str(parent);
    scratch.push('/');
    scratch.push_str(name);
    scratch
}

/// Where a create goes and how its name starts.
pub(crate) struct NodeName<'a> {
    /// The lock directory.
    pub(crate) parent: &'a str,
    /// `{parent}/{name_prefix}`.
    pub(crate) prefix: &'a str,
    /// `{kind}-{guid}-`.
    pub(crate) name_prefix: &'a str,
    /// The ACL it and its parents are created with.
    pub(crate) acls: zk::Acls<'static>,
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
    acls: zk::Acls<'static>,
    requests: &mut u64,
) -> Result<(), zk::Error> {
    for (i, _) in parent.match_indices('/').skip(1) {
        *requests += 1;
        create_dir(zk, &parent[..i], acls).await?;
    }
    *requests += 1;
    create_dir(zk, parent, acls).await
}

async fn create_dir(zk: &zk::Client, path: &str, acls: zk::Acls<'static>) -> Result<(), zk::Error> {
    match zk.create(path, b"", &persistent(acls)).await {
        Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Step 1 of the ZooKeeper queue recipes: creates this client's
/// ephemeral-sequential node, making missing parents once, and after a connection loss finds
/// it again by the GUID in its name instead of creating a second one. Returns its `czxid` and
/// sequence. Gives up with `ConnectionLoss` after [`MAX_CONNECTION_LOSSES`] losses (counted in
/// `losses`, which the caller's wait step goes on counting).
pub(crate) async fn create_or_find(
    zk: &zk::Client,
    node: &NodeName<'_>,
    scratch: &mut String,
    requests: &mut u64,
    losses: &mut u32,
) -> Result<(i64, i64), zk::Error> {
    let mut made_parents = false;
    let mut look_for_own = false;
    loop {
        let error = if look_for_own {
            match find_own(zk, node, scratch, requests).await {
                Ok(Some(found)) => return Ok(found),
                Ok(None) => {
                    look_for_own = false;
                    continue;
                }
                Err(e) => e,
            }
        } else {
            *requests += 1;
            match zk
                .create(node.prefix, b"", &ephemeral_sequential(node.acls))
                .await
            {
                Ok((stat, sequence)) => return Ok((stat.czxid, sequence.into_i64())),
                Err(zk::Error::NoNode) if !made_parents => {
                    made_parents = true;
                    make_parents(zk, node.parent, node.acls, requests).await?;
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

/// The recovery lookup after a `ConnectionLoss` during the create: this client's node for the
/// key, found by its guid, with its `czxid`.
pub(crate) async fn find_own(
    zk: &zk::Client,
    node: &NodeName<'_>,
    scratch: &mut String,
    requests: &mut u64,
) -> Result<Option<(i64, i64)>, zk::Error> {
    *requests += 1;
    let children = zk.list_children(node.parent).await?;
    let Some((name, sequence)) = children
        .iter()
        .filter(|name| name.starts_with(node.name_prefix))
        .filter_map(|name| Some((name, paths::sequence_of(name)?)))
        .max_by_key(|(_, s)| *s)
    else {
        return Ok(None);
    };
    scratch.clear();
    scratch.push_str(node.parent);
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
        self.acquire_inner(key, false).await
    }

    async fn acquire_shared(&mut self, key: KeyId) -> Outcome<Grant<FairHandle>> {
        self.acquire_inner(key, true).await
    }

    fn shared_mode(&self) -> bool {
        self.queue.shared
    }

    async fn release(&mut self, grant: Grant<FairHandle>) -> Outcome<()> {
        if self.zk.state().is_terminated() {
            return Outcome::Fail(ErrorKind::LockLost);
        }
        self.own_path(grant.key, grant.handle);
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
        self.own_path(grant.key, grant.handle);
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
        tracing::debug!(client = %self.id, recipe = %self.queue.kind, "zookeeper client closing");
        connect::close(&self.ensemble, self.zk).await;
    }

    async fn abandon(self) {
        tracing::debug!(client = %self.id, recipe = %self.queue.kind, "zookeeper client abandoned");
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
        let names = Names {
            exclusive: "write-abc-".into(),
            shared: "read-abc-".into(),
        };
        let k = FairKey::new("/lockbench/rwlock", &names, 3);
        assert_eq!(k.parent, "/lockbench/rwlock/k3");
        assert_eq!(k.prefix(false), "/lockbench/rwlock/k3/write-abc-");
        assert_eq!(k.prefix(true), "/lockbench/rwlock/k3/read-abc-");
        assert!(names.is_mine("read-abc-0000000001") && names.is_mine("write-abc-0000000002"));
        assert!(!names.is_mine("read-abd-0000000001"));
        assert!(is_read("read-abd-0000000001") && !is_read("write-abc-0000000002"));
    }
}
