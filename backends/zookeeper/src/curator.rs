//! **zk-curator**: the `zookeeper-client` crate's Curator-compatible lock recipe
//! (`Client::lock` with `LockPrefix::new_curator`), the lock a Rust user would take off the
//! shelf. Lock nodes are `{root}/curator/k{key}/_c_{uuid}-lock-{sequence}`, exactly the names
//! Apache Curator's `InterProcessMutex` uses, so both can even share a lock.
//!
//! What the library does per acquisition (read from its source, `client/mod.rs`): `create`
//! (ancestors created on `NoNode`), `getChildren`, and for a waiter `getData`-with-watch on the
//! predecessor plus another `getChildren` per wake-up; after a `ConnectionLoss` during the create
//! it finds its node again by the uuid in the name. It sends its own requests, so
//! [`LockClient::requests_sent`] is `None` and results rely on ZooKeeper's `mntr` counters for
//! this recipe.
//!
//! Token: the sequence number parsed from the lock path. It grows strictly per key (the
//! sequence is the parent's child-version counter), and costs no request.
//!
//! Why a task per client: the crate's `LockClient<'a>` borrows the `zk::Client` and deletes the
//! lock node in the background when dropped. A grant must be `'static`, and must not keep the
//! session alive (a `Client` clone in a grant would keep a dead holder's session open, and
//! dropping the grant would then free the lock at once). So each lockbench client runs one
//! task that owns the `zk::Client` and the held `LockClient`s side by side; calls reach it over
//! a channel (a few microseconds, negligible beside a ZooKeeper round trip).
//!
//! Release must be *complete* when it returns `Ok`: the crate's drop only *spawns* the delete,
//! so returning right away would let the next holder be granted while our caller already
//! believes it has released, and would let a release that never happened (lost connection)
//! pass as `ok`. lockbench therefore sends `exists`-with-watch on its own node, then drops the
//! `LockClient` (the crate's delete goes out after the `exists`, on the same ordered session),
//! and returns `Ok` when the `NodeDeleted` notification arrives, i.e. once ZooKeeper has
//! committed the delete. If the node was already gone it is `fail lock-lost`. This costs one
//! `exists` (a local read on the member) per release; the delete itself is the library's.
//!
//! On `abandon` (and `close`) the held `LockClient`s are forgotten rather than dropped, so the
//! library does not delete them: a crashed holder deletes nothing. That leaks their path
//! strings (under 100 bytes each), once per client lifetime.

use crate::ZookeeperKnobs;
use crate::connect::{self, Ensemble};
use crate::counters;
use crate::errors::{acquire_failed, held_call_failed};
use crate::fair::knobs;
use crate::paths::{self, KeyTable};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, ClientId, Endpoints, ErrorKind, FencingToken, Grant, KeyId, LockClient,
    Outcome, ServerCounters,
};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use zookeeper_client as zk;

/// The zk-curator recipe bound to an ensemble: makes [`ZkCuratorClient`]s.
#[derive(Debug)]
pub struct ZkCurator {
    ensemble: Arc<Ensemble>,
    root: String,
    knobs: ZookeeperKnobs,
    keys: u32,
}

impl ZkCurator {
    /// A zk-curator backend on `endpoints.zookeeper`, with lock nodes under
    /// `{knobs.root}/curator`. `keys` is the scenario's key count; `seed` is accepted for
    /// uniformity and unused (the library draws its own node uuids).
    pub fn new(
        endpoints: &Endpoints,
        knobs: &ZookeeperKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<ZkCurator, BackendError> {
        let _ = seed;
        let ensemble = Ensemble::new(endpoints, knobs)?;
        let root = paths::check_root(&knobs.root).map_err(BackendError::Config)?;
        Ok(ZkCurator {
            ensemble: Arc::new(ensemble),
            root: root.to_string(),
            knobs: knobs.clone(),
            keys,
        })
    }
}

impl Backend for ZkCurator {
    type Client = ZkCuratorClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: crate::recipes::ZK_CURATOR,
            waits_by:
                "curator recipe: getData watch on the predecessor node (zookeeper-client crate)"
                    .into(),
            fencing: "sequence number of the lock node".into(),
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

    async fn connect(&self, client: ClientId) -> Result<ZkCuratorClient, BackendError> {
        let zk = self.ensemble.connect().await?;
        tracing::debug!(%client, session = %zk.session_id(), "zk-curator client connected");
        let base = format!("{}/curator", self.root);
        let dirs = KeyTable::new(self.keys, |k| format!("{base}/k{k}"));
        let (commands, inbox) = mpsc::unbounded_channel();
        let actor = tokio::spawn(serve(zk, self.ensemble.clone(), base, dirs, inbox));
        Ok(ZkCuratorClient {
            id: client,
            commands,
            actor,
        })
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        counters::packets_received(&self.ensemble.members, self.ensemble.tls.as_ref()).await
    }

    /// The library's node names carry no client, so the holder is named by its token, the
    /// lowest node's sequence (the same number [`LockClient::acquire`] hands out).
    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        let dir = format!("{}/curator", self.root);
        let naming = crate::observe::Naming::SequenceToken;
        crate::observe::observe(&self.ensemble, dir, keys, naming, clock, sink).await
    }
}

/// What a zk-curator client keeps about a held lock: which of its held locks it is, and the
/// node's sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuratorHandle {
    slot: u64,
    sequence: i64,
}

impl CuratorHandle {
    /// The lock node's sequence number.
    pub fn sequence(&self) -> i64 {
        self.sequence
    }
}

/// One zk-curator client: one ZooKeeper session, driven by its own task.
///
/// Dropping a client without [`LockClient::close`] behaves like [`LockClient::abandon`].
#[derive(Debug)]
pub struct ZkCuratorClient {
    id: ClientId,
    commands: mpsc::UnboundedSender<Command>,
    actor: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
enum Command {
    Acquire {
        key: u32,
        reply: oneshot::Sender<Outcome<(u64, i64)>>,
    },
    Release {
        slot: u64,
        reply: oneshot::Sender<Outcome<()>>,
    },
    Renew {
        slot: u64,
        reply: oneshot::Sender<Outcome<()>>,
    },
    End {
        graceful: bool,
        reply: oneshot::Sender<()>,
    },
}

impl ZkCuratorClient {
    async fn ask<T>(
        &self,
        command: impl FnOnce(oneshot::Sender<Outcome<T>>) -> Command,
    ) -> Outcome<T> {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(command(reply)).is_err() {
            return Outcome::Info(ErrorKind::Other);
        }
        answer.await.unwrap_or(Outcome::Info(ErrorKind::Other))
    }

    async fn end(self, graceful: bool) {
        let (reply, done) = oneshot::channel();
        if self.commands.send(Command::End { graceful, reply }).is_ok() {
            let _ = done.await;
        }
        let _ = self.actor.await;
    }
}

impl LockClient for ZkCuratorClient {
    type Handle = CuratorHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<CuratorHandle>> {
        match self
            .ask(|reply| Command::Acquire { key: key.0, reply })
            .await
        {
            Outcome::Ok((slot, sequence)) => Outcome::Ok(Grant {
                key,
                token: Some(FencingToken(sequence as u64)),
                handle: CuratorHandle { slot, sequence },
            }),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    async fn release(&mut self, grant: Grant<CuratorHandle>) -> Outcome<()> {
        let slot = grant.handle.slot;
        self.ask(|reply| Command::Release { slot, reply }).await
    }

    async fn renew(&mut self, grant: &Grant<CuratorHandle>) -> Outcome<()> {
        let slot = grant.handle.slot;
        self.ask(|reply| Command::Renew { slot, reply }).await
    }

    fn requests_sent(&self) -> Option<u64> {
        None
    }

    async fn close(self) {
        tracing::debug!(client = %self.id, "zk-curator client closing");
        self.end(true).await;
    }

    async fn abandon(self) {
        tracing::debug!(client = %self.id, "zk-curator client abandoned");
        self.end(false).await;
    }
}

/// The client's task: owns the session and the locks it holds.
async fn serve(
    zk: zk::Client,
    ensemble: Arc<Ensemble>,
    base: String,
    mut dirs: KeyTable<String>,
    mut inbox: mpsc::UnboundedReceiver<Command>,
) {
    let options = zk::LockOptions::new(ensemble.acls)
        .with_ancestor_options(crate::fair::persistent(ensemble.acls))
        .expect("persistent ancestors are valid lock options");
    let mut held: Vec<(u64, zk::LockClient<'_>)> = Vec::new();
    let mut next_slot = 0u64;
    let (graceful, reply) = loop {
        // All senders gone: the client was dropped, which counts as abandoned.
        let Some(command) = inbox.recv().await else {
            break (false, None);
        };
        match command {
            Command::Acquire { key, mut reply } => {
                let dir = dirs.get(key, |k| format!("{base}/k{k}"));
                let prefix = match zk::LockPrefix::new_curator(dir, "lock-") {
                    Ok(prefix) => prefix,
                    Err(e) => {
                        let _ = reply.send(acquire_failed(&e));
                        continue;
                    }
                };
                // The caller may give up (drop its future) while we wait; the crate's lock
                // future is cancellation-safe: dropping it deletes whatever it created.
                let result = tokio::select! {
                    result = zk.lock(prefix, b"", options.clone()) => Some(result),
                    () = reply.closed() => None,
                };
                let outcome = match result {
                    None => continue,
                    Some(Err(e)) => acquire_failed(&e),
                    Some(Ok(lock)) => match paths::sequence_of(lock.lock_path()) {
                        Some(sequence) => {
                            let slot = next_slot;
                            next_slot += 1;
                            held.push((slot, lock));
                            Outcome::Ok((slot, sequence))
                        }
                        None => {
                            tracing::warn!(path = lock.lock_path(), "zk-curator: no sequence");
                            Outcome::Info(ErrorKind::Other)
                        }
                    },
                };
                if let Err(Outcome::Ok((slot, _))) = reply.send(outcome) {
                    // The caller left at the last moment: let the crate release the lock.
                    take(&mut held, slot);
                }
            }
            Command::Release { slot, reply } => {
                let outcome = match take(&mut held, slot) {
                    Some(lock) => release(&zk, lock).await,
                    None => Outcome::Fail(ErrorKind::LockLost),
                };
                let _ = reply.send(outcome);
            }
            Command::Renew { slot, reply } => {
                let outcome = match held.iter().find(|(s, _)| *s == slot) {
                    None => Outcome::Fail(ErrorKind::LockLost),
                    Some(_) if zk.state().is_terminated() => Outcome::Fail(ErrorKind::LockLost),
                    Some((_, lock)) => match zk.check_stat(lock.lock_path()).await {
                        Ok(Some(_)) => Outcome::Ok(()),
                        Ok(None) => Outcome::Fail(ErrorKind::LockLost),
                        Err(e) => held_call_failed(&e),
                    },
                };
                let _ = reply.send(outcome);
            }
            Command::End { graceful, reply } => break (graceful, Some(reply)),
        }
    };
    // Forget, not drop: dropping would make the crate delete the nodes in the background. A
    // crashed holder deletes nothing, and a graceful close deletes them with the session.
    for (_, lock) in held.drain(..) {
        std::mem::forget(lock);
    }
    drop(held);
    if graceful {
        connect::close(&ensemble, zk).await;
    } else {
        connect::abandon(zk).await;
    }
    if let Some(reply) = reply {
        let _ = reply.send(());
    }
}

fn take<'a>(held: &mut Vec<(u64, zk::LockClient<'a>)>, slot: u64) -> Option<zk::LockClient<'a>> {
    let i = held.iter().position(|(s, _)| *s == slot)?;
    Some(held.swap_remove(i).1)
}

/// Releases `lock` and returns once ZooKeeper has committed the delete (see the module docs).
async fn release(zk: &zk::Client, lock: zk::LockClient<'_>) -> Outcome<()> {
    if zk.state().is_terminated() {
        std::mem::forget(lock);
        return Outcome::Fail(ErrorKind::LockLost);
    }
    // Sent now, so it reaches the server before the delete that dropping `lock` spawns.
    let watching = zk.check_and_watch_stat(lock.lock_path());
    drop(lock);
    match watching.await {
        Ok((Some(_), watcher)) => match watcher.changed().await.event_type {
            zk::EventType::NodeDeleted => Outcome::Ok(()),
            zk::EventType::Session => Outcome::Info(ErrorKind::SessionExpired),
            _ => Outcome::Info(ErrorKind::Other),
        },
        Ok((None, _)) => Outcome::Fail(ErrorKind::LockLost),
        Err(e) => held_call_failed(&e),
    }
}
