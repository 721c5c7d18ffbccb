//! Waiting for a key's deletion with a watch that etcd serves at once (a *synced* watch).
//!
//! # The finding: where Go's `concurrency.Mutex` loses ~95 ms per contended hand-off
//!
//! In etcd 3.4 (`mvcc/watchable_store.go`, `watchableStore.watch`) a new watcher is put in the
//! **synced** group only when `startRev > currentRev || startRev == 0`; otherwise it goes to the
//! **unsynced** group, which `syncWatchersLoop` catches up only every **100 ms**
//! (`waitDuration := 100 * time.Millisecond`). Events for an unsynced watcher, including the
//! deletion a waiter is waiting for, are delivered at the next sync, not when they happen.
//!
//! Go's `waitDeletes` (`clientv3/concurrency/key.go`) gets the predecessor and then watches it
//! with `WithRev(resp.Header.Revision)`: a start revision that is, by construction, already
//! current. Every waiter's watch is therefore unsynced, and a release that happens while the
//! waiter is unsynced (the normal case under contention, where each waiter waits only a few
//! milliseconds) reaches it only at the next 100 ms tick: ~50-100 ms per hand-off, which is the
//! 94 ms p50 the Go reference shows at N=8, K=1 (DESIGN §6). The server-side Lock API runs the
//! same Go Mutex inside the server, so it inherits the same delay.
//!
//! # What this module does instead
//!
//! [`WatchStart::Synced`] (the default) creates the watch **without** a start revision, so etcd
//! puts it in the synced group (`minRev = currentRev + 1`) and delivers the deletion as soon as it
//! is applied. A deletion that happened between the `get` (at revision `H`) and the watch's
//! creation would then be missed, so the waiter compares the `created` response's header
//! revision `C` with `H`:
//! - `C <= H`: the member had applied nothing after `H` when the watch was created, so the
//!   predecessor (alive at `H`) was deleted, if at all, after the watch existed: the watch will
//!   see it.
//! - `C > H`: something happened in between; one linearizable `get` of the predecessor decides.
//!   If it is gone (or exists with another create revision: its owner released and queued
//!   again under the same key, which deadlocked a first version of this code at N=2) we are
//!   done; if the same entry still exists at the get's revision `G >= C`, its deletion will
//!   come at a revision `> G`, which the watch delivers.
//!
//! Exactly what `C` is: etcd's `v3rpc/watch.go` reads `wsrev := watchStream.Rev()`, turns a
//! zero start revision into `wsrev + 1`, creates the watcher, and answers `created` with header
//! revision `wsrev`. So the watch sees every event after `C = wsrev`, whatever happens. It is
//! synced only if no revision was applied between that read and the watcher's registration,
//! and that race is lost often enough under contention to have been the whole remaining tail
//! (p99 78-100 ms). So the waiter does not trust a watch until a progress answer
//! read right behind its create proves it synced, and creates it again otherwise
//! ([`crate::synced`] explains the race and the proof).
//!
//! [`WatchStart::AtHeaderRevision`] reproduces Go's `WithRev(header)` for comparison.
//!
//! The waiter keeps one watch stream for the client's lifetime and adds / cancels one watch per
//! wait on it, instead of opening a gRPC stream per wait; each create, progress request and
//! cancel is counted as a request.

use crate::errors::{CallError, timed};
use crate::synced::{Answer, MAX_ATTEMPTS, ProgressLedger, Proof, Prover};
use etcd_client::{Client, GetOptions, WatchFilterType, WatchOptions, WatchStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a waiter's watch starts, i.e. whether etcd serves it synced or unsynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WatchStart {
    /// No start revision, proven synced (events delivered as applied) by a progress answer
    /// ([`crate::synced`]), plus a re-check of the watched key when the cluster's revision moved
    /// between the `get` and the watch's creation.
    #[default]
    Synced,
    /// Start at the revision of the `get` that found the predecessor, as Go's `waitDeletes`
    /// does. etcd 3.4 puts such a watch in its unsynced group, served every 100 ms. Kept to
    /// measure the difference.
    AtHeaderRevision,
}

impl WatchStart {
    /// The name printed in results' knobs.
    pub fn name(self) -> &'static str {
        match self {
            WatchStart::Synced => "synced (no start rev, proven by a progress answer, + re-check)",
            WatchStart::AtHeaderRevision => "at header revision (Go waitDeletes, unsynced)",
        }
    }
}

/// One client's deletion waiter: a lazily opened watch stream reused across waits.
pub(crate) struct DeletionWaiter {
    start: WatchStart,
    /// Boxed: a `WatchStream` is large and most of a client's life is spent not waiting.
    stream: Option<Box<WatchStream>>,
    /// Progress requests sent on `stream` and not answered yet.
    progress: ProgressLedger,
    /// The backend-wide count of watches left unproven and created again.
    unproven: Arc<AtomicU64>,
    /// A wait started and did not finish (its future was dropped): the stream may hold a
    /// `created` answer that is not the next wait's, so the next wait opens a fresh stream.
    dirty: bool,
}

impl DeletionWaiter {
    pub(crate) fn new(start: WatchStart, unproven: Arc<AtomicU64>) -> DeletionWaiter {
        DeletionWaiter {
            start,
            stream: None,
            progress: ProgressLedger::default(),
            unproven,
            dirty: false,
        }
    }

    /// Drops the stream (its state is unknown); the next wait opens a fresh one.
    fn reset(&mut self) {
        self.stream = None;
        self.progress = ProgressLedger::default();
    }

    /// Returns once `key`, which existed at revision `seen_at` with create revision `created`,
    /// has been deleted. (The same key may be created again afterwards by the same contender:
    /// that is a new entry, recognised by its create revision.) `requests` is incremented for
    /// every request sent (watch create, progress request, cancel, re-check get). Returns
    /// `true` when a watch event reported the deletion (a notification), `false` when the
    /// re-check get found the key already gone.
    pub(crate) async fn wait_deleted(
        &mut self,
        client: &mut Client,
        key: &[u8],
        created: i64,
        seen_at: i64,
        requests: &mut u64,
    ) -> Result<bool, CallError> {
        if self.dirty {
            self.reset();
        }
        self.dirty = true;
        let result = self
            .wait_inner(client, key, created, seen_at, requests)
            .await;
        if result.is_err() {
            self.reset();
        }
        self.dirty = false;
        result
    }

    async fn wait_inner(
        &mut self,
        client: &mut Client,
        key: &[u8],
        created: i64,
        seen_at: i64,
        requests: &mut u64,
    ) -> Result<bool, CallError> {
        let mut options = WatchOptions::new().with_filters([WatchFilterType::NoPut]);
        if self.start == WatchStart::AtHeaderRevision {
            options = options.with_start_revision(seen_at);
        }
        let mut attempt = 0;
        let (id, created_at) = loop {
            attempt += 1;
            let (id, created_at) = self.create(client, key, &options, requests).await?;
            let stream = self
                .stream
                .as_deref_mut()
                .ok_or(CallError::CONNECTION_LOST)?;
            if self.start == WatchStart::AtHeaderRevision {
                break (id, created_at);
            }
            let prover = Prover {
                id,
                created: created_at,
            };
            let proof = loop {
                let answer = Answer::of(&next(stream).await?);
                if let Some(proof) = prover.take(&mut self.progress, answer) {
                    break proof;
                }
            };
            match proof {
                Proof::Synced => break (id, created_at),
                Proof::Canceled => return Err(CallError::CONNECTION_LOST),
                Proof::Deleted => {
                    *requests += 1;
                    map_err(stream.cancel(id).await)?;
                    return Ok(true);
                }
                Proof::Unproven => {
                    self.unproven.fetch_add(1, Ordering::Relaxed);
                    if attempt >= MAX_ATTEMPTS {
                        break (id, created_at); // exact still, only perhaps late
                    }
                    *requests += 1;
                    map_err(stream.cancel(id).await)?;
                }
            }
        };
        let stream = self
            .stream
            .as_deref_mut()
            .ok_or(CallError::CONNECTION_LOST)?;
        let mut deleted = false;
        let mut notified = false;
        if self.start == WatchStart::Synced && created_at > seen_at {
            *requests += 1;
            let opts = GetOptions::new().with_keys_only();
            let found = timed(client.get(key.to_vec(), Some(opts))).await?;
            deleted = found
                .kvs()
                .first()
                .is_none_or(|kv| kv.create_revision() != created);
        }
        while !deleted {
            match Answer::of(&next(stream).await?) {
                // Compaction or a server-side cancel: we cannot know what we missed.
                Answer::Watch {
                    id: w,
                    canceled: true,
                    ..
                } if w == id => {
                    return Err(CallError::CONNECTION_LOST);
                }
                Answer::Watch {
                    id: w, deleted: d, ..
                } if w == id => {
                    deleted = d;
                    notified = d;
                }
                Answer::Progress { rev } => {
                    self.progress.answered(rev);
                }
                _ => {}
            }
        }
        *requests += 1;
        map_err(stream.cancel(id).await)?;
        Ok(notified)
    }

    /// Sends a watch create for `key` (on the client's stream, opened on first use) and, for a
    /// synced start, the progress request that proves it ([`crate::synced`]); returns the
    /// watch's id and its `created` header revision.
    async fn create(
        &mut self,
        client: &mut Client,
        key: &[u8],
        options: &WatchOptions,
        requests: &mut u64,
    ) -> Result<(i64, i64), CallError> {
        *requests += 1;
        let stream = match &mut self.stream {
            Some(s) => {
                map_err(s.watch(key.to_vec(), Some(options.clone())).await)?;
                s
            }
            None => self.stream.insert(Box::new(
                timed(client.watch(key.to_vec(), Some(options.clone()))).await?,
            )),
        };
        if self.start == WatchStart::Synced {
            *requests += 1;
            map_err(stream.request_progress().await)?;
            self.progress.asked();
        }
        // The first `created` answer is ours: the server handles creates in order and we have
        // only one outstanding. Earlier answers belong to watches already cancelled; progress
        // answers met on the way are settled in the ledger.
        loop {
            match Answer::of(&next(stream).await?) {
                Answer::Created { refused: true, .. } => return Err(CallError::CONNECTION_LOST),
                Answer::Created { id, rev, .. } => return Ok((id, rev)),
                Answer::Progress { rev } => {
                    self.progress.answered(rev);
                }
                Answer::Watch { .. } => {}
            }
        }
    }
}

async fn next(stream: &mut WatchStream) -> Result<etcd_client::WatchResponse, CallError> {
    match stream.message().await {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(CallError::CONNECTION_LOST),
        Err(e) => Err(crate::errors::classify(&e)),
    }
}

fn map_err<T>(r: Result<T, etcd_client::Error>) -> Result<T, CallError> {
    r.map_err(|e| crate::errors::classify(&e))
}
