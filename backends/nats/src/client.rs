//! [`NatsClient`]: one lock client on its own NATS connection, and what each of its outcomes
//! means.
//!
//! **Acquire** is a create: `update(key, "c<id>", 0)`, a publish carrying
//! `Nats-Expected-Last-Subject-Sequence: 0`, which the bucket's stream stores only if the key
//! has no message at all. The revision it gets back is the fencing token (the stream
//! sequence: every later write to the bucket, by anyone, has a larger one).
//!
//! Why always 0, and why a release removes the message instead of writing a delete marker (as
//! the KV API's `delete` does): on nats-server 2.9 with a replicated stream, two writes
//! expecting the same marker's sequence can both be stored. Measured on the managed cluster
//! (R3): 8 concurrent writers expecting the marker of a just-released key had more than one
//! winner in 7 to 44 of 50 rounds (six runs); expecting 0 on a key without messages, never
//! more than one (`race::` in the tests). What the measurement fits: the stream leader checks
//! the expected sequence against what it has stored before it proposes the write, blind to
//! writes still in flight (later nats-server releases refuse a second in-flight write to a
//! subject, `expectedPerSubjectInProcess` in `server/stream.go`); why 0 holds was measured,
//! not read in the 2.9 source. The client library's `create` falls back to
//! expecting the marker after a refusal, and reads the key by direct get, which a follower
//! may answer from the past: neither is used here.
//!
//! **Release** deletes the holder's message from the stream by its sequence
//! (`STREAM.MSG.DELETE`, through the stream leader and its Raft group): the bucket keeps one
//! message per key, so that message exists only while it is still the key's last; once it
//! aged out or was replaced the server answers "no message found" and the holder learns
//! `lock-lost`. No check-then-delete window: the sequence is the condition. The key is then
//! empty, so the next create expecting 0 can land. A message deleted this way sends nothing
//! to a KV watcher, so the releaser then publishes an empty wake-up message on the key's
//! wake subject (`lockbench.wake.<bucket>.<key>`, core NATS, not stored).
//!
//! **Waiting.** A waiter subscribes to the key's wake subject before its first create on that
//! key (so no release after that create is missed). A refused create reads the key's last
//! message from the stream leader (`STREAM.MSG.GET`, consistent): none, and it retries at
//! once; otherwise it waits for a wake-up, or until that message is `ttl` old (a create
//! refused right after a wake-up reads nothing: another waiter's entry was just written): an entry that
//! ages out (the bucket's `max_age`) is removed without any message to anyone, so the waiter
//! retries then, and every `expiry_poll` after while the server has not removed it yet. A
//! renewal moves the entry's age, which the waiter learns at its next read. Wake-ups published
//! while a waiter's connection was down are lost: a reconnect makes it look again.
//!
//! **Renew** is `update(key, "c<id>", held)`: it writes a new message (a new revision, which
//! the handle keeps) only while the key's last message is the holder's own, and that
//! message's age starts at zero: the lock lives `ttl` from the last renewal. The fencing
//! token stays the acquiring revision. Its precondition is a revision above 0, the kind shown
//! above not to hold against a write in flight, so one window is likely to remain (not
//! measured): a renewal checked just before the entry ages out on the leader, and stored after
//! another client's create landed on the emptied key, would replace that client's entry
//! (history 1); that client's release would then find its message gone and report
//! `lock-lost`. It needs a renewal at the instant of expiry, which a holder that renews well
//! within `ttl` never sends.
//!
//! Outcomes: a refusal by revision or "no message found" is definite (`fail lock-lost`); a
//! reply that does not come within `response_timeout`, or a publish error, is indeterminate
//! (`info`): the write may have been stored. After an indeterminate acquire, or one cancelled
//! while its create was in flight (a run that ends), [`LockClient::close`] reads the key and
//! deletes its message if it holds this client's value, so the next run does not wait `ttl`
//! for it.

use crate::NatsKnobs;
use crate::bucket::{key_name, wake_subject};
use async_nats::jetstream::kv::{Store, UpdateErrorKind};
use async_nats::jetstream::stream::{DeleteMessageErrorKind, LastRawMessageErrorKind};
use futures::{FutureExt, StreamExt};
use lockbench_core::{
    ClientId, ErrorKind, FencingToken, Grant, KeyId, LockClient, Outcome, WakeupTally,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// JetStream's error code for "no message found".
const NO_MESSAGE: u64 = 10057;

/// What a client keeps about a held lock: its key and the revision of its latest write
/// (changed by each renewal).
#[derive(Debug)]
pub struct NatsHandle {
    key: String,
    wake: String,
    revision: AtomicU64,
}

impl NatsHandle {
    /// The revision of the holder's latest write.
    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Relaxed)
    }
}

/// What the stream leader says a key's last message is.
enum Last {
    /// No message: free.
    Free,
    /// A message written at this time (ns since the Unix epoch), with this sequence and
    /// value.
    Held {
        written_ns: i128,
        sequence: u64,
        value: Vec<u8>,
    },
}

/// One lock client (see the module docs).
pub struct NatsClient {
    client: async_nats::Client,
    kv: Store,
    knobs: Arc<NatsKnobs>,
    value: String,
    /// Each key's wake-up subscription, made before the first create on it.
    wakes: HashMap<KeyId, async_nats::Subscriber>,
    /// Keys whose create had no definite answer (indeterminate, or cancelled with the
    /// acquire): `close` cleans them up.
    unsure: Vec<KeyId>,
    tally: WakeupTally,
    /// Notified at every (re)connect of the client's connection.
    reconnected: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for NatsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsClient")
            .field("value", &self.value)
            .field("bucket", &self.kv.name)
            .finish()
    }
}

/// The value a client writes into the keys it holds (`c<id>`), which the observer reads back.
pub fn holder_value(id: ClientId) -> String {
    format!("c{}", id.0)
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// `f`, unless it takes longer than `budget`.
async fn within<T>(budget: Duration, f: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(budget, f).await.ok()
}

/// The key `name`'s last message, from the stream leader.
async fn last(kv: &Store, name: &str, budget: Duration) -> Result<Last, ErrorKind> {
    let subject = format!("{}{name}", kv.prefix);
    let read = kv.stream.get_last_raw_message_by_subject(&subject);
    match within(budget, read).await {
        None => Err(ErrorKind::Timeout),
        Some(Ok(m)) => Ok(Last::Held {
            written_ns: m.time.unix_timestamp_nanos(),
            sequence: m.sequence,
            value: m.payload.to_vec(),
        }),
        Some(Err(e)) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(Last::Free),
        Some(Err(e)) => {
            tracing::debug!("nats: reading {name}: {e}");
            Err(ErrorKind::Unavailable)
        }
    }
}

impl NatsClient {
    pub(crate) fn new(
        client: async_nats::Client,
        kv: Store,
        knobs: Arc<NatsKnobs>,
        id: ClientId,
        tally: WakeupTally,
        reconnected: Arc<tokio::sync::Notify>,
    ) -> NatsClient {
        // The first connect's notice is no reconnect.
        let _ = reconnected.notified().now_or_never();
        NatsClient {
            client,
            kv,
            knobs,
            value: holder_value(id),
            wakes: HashMap::new(),
            unsure: Vec::new(),
            tally,
            reconnected,
        }
    }

    fn name(&self, key: KeyId) -> String {
        key_name(&self.knobs.prefix, key)
    }

    /// Drops the wake-ups that arrived since the last look (without waiting): the create
    /// that follows sees the state they announced.
    fn drain(&mut self, key: KeyId) {
        let Some(sub) = self.wakes.get_mut(&key) else {
            return;
        };
        while let Some(Some(_)) = sub.next().now_or_never() {}
    }

    async fn ensure_wake(&mut self, key: KeyId) -> Result<(), ErrorKind> {
        if self.wakes.contains_key(&key) {
            return Ok(());
        }
        let subject = wake_subject(&self.kv.name, &self.name(key));
        match self.client.subscribe(subject).await {
            Ok(sub) => {
                self.wakes.insert(key, sub);
                Ok(())
            }
            Err(e) => {
                tracing::debug!("nats: subscribing to wake-ups: {e}");
                Err(ErrorKind::ConnectionLost)
            }
        }
    }

    /// Waits for a wake-up (`true`), a reconnect, or until a message written at `written_ns`
    /// is `ttl` old (`false`).
    async fn wait(&mut self, key: KeyId, written_ns: i128) -> bool {
        let ttl = self.knobs.ttl.as_nanos() as i128;
        let left = (written_ns + ttl - now_ns()).max(0) as u64;
        let until = Instant::now() + Duration::from_nanos(left).max(self.knobs.expiry_poll);
        let Some(sub) = self.wakes.get_mut(&key) else {
            return false;
        };
        let woken = tokio::select! {
            woken = tokio::time::timeout_at(until, sub.next()) => woken,
            // Wake-ups published while the connection was down are lost: look again.
            _ = self.reconnected.notified() => return false,
        };
        match woken {
            Ok(Some(_)) => {
                self.tally.notification();
                self.tally.request();
                true
            }
            Ok(None) => {
                self.wakes.remove(&key);
                false
            }
            Err(_) => false,
        }
    }

    /// Removes this client's entry of `key` if a create whose answer it never saw landed
    /// (an indeterminate or cancelled acquire), deleting by sequence so nobody else's entry is
    /// touched.
    ///
    /// A read alone cannot tell: the leader answers reads from what it has applied, and a
    /// create still being replicated is not there yet (seen at the end of runs: the read found
    /// nothing, the create landed after it, and the next run waited `ttl`). So it first sends
    /// another create on the same connection: the leader takes a connection's writes in order,
    /// so once that one is answered the earlier one has been applied or refused. It either
    /// lands (the key was free: its own entry is deleted at once) or is refused, and then the
    /// read shows the key as it is.
    async fn clean_up(&mut self, key: KeyId) {
        let name = self.name(key);
        let budget = self.knobs.response_timeout;
        let fence = self.kv.update(&name, self.value.clone().into(), 0);
        let sequence = match within(budget, fence).await {
            Some(Ok(revision)) => revision,
            Some(Err(e)) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                match last(&self.kv, &name, budget).await {
                    Ok(Last::Held {
                        sequence, value, ..
                    }) if value == self.value.as_bytes() => sequence,
                    _ => return,
                }
            }
            _ => return,
        };
        if let Some(Ok(true)) = within(budget, self.kv.stream.delete_message(sequence)).await {
            let wake = wake_subject(&self.kv.name, &name);
            let _ = self.client.publish(wake, "".into()).await;
        }
    }
}

impl LockClient for NatsClient {
    type Handle = NatsHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<NatsHandle>> {
        let name = self.name(key);
        let budget = self.knobs.response_timeout;
        if let Err(e) = self.ensure_wake(key).await {
            return Outcome::Fail(e);
        }
        let mut woken = false;
        let mut refused_free = 0;
        loop {
            self.drain(key);
            // Until the create's answer arrives the key may hold this client's entry: if the
            // acquire is cancelled or indeterminate, `close` removes it.
            if !self.unsure.contains(&key) {
                self.unsure.push(key);
            }
            let create = self.kv.update(&name, self.value.clone().into(), 0);
            let answer = within(budget, create).await;
            if matches!(answer, Some(Ok(_)))
                || matches!(&answer, Some(Err(e)) if e.kind() == UpdateErrorKind::WrongLastRevision)
            {
                self.unsure.retain(|k| *k != key);
            }
            match answer {
                Some(Ok(revision)) => {
                    return Outcome::Ok(Grant {
                        key,
                        token: Some(FencingToken(revision)),
                        handle: NatsHandle {
                            wake: wake_subject(&self.kv.name, &name),
                            key: name,
                            revision: AtomicU64::new(revision),
                        },
                    });
                }
                Some(Err(e)) if e.kind() == UpdateErrorKind::WrongLastRevision => {}
                Some(Err(e)) if e.kind() == UpdateErrorKind::InvalidKey => {
                    return Outcome::Fail(ErrorKind::Other);
                }
                // The client's own request timeout (the same budget) fired first.
                Some(Err(e)) if e.kind() == UpdateErrorKind::TimedOut => {
                    return Outcome::Info(ErrorKind::Timeout);
                }
                Some(Err(e)) => {
                    tracing::debug!("nats: create {name}: {e}");
                    return Outcome::Info(ErrorKind::Unavailable);
                }
                None => return Outcome::Info(ErrorKind::Timeout),
            }
            // Refused right after a wake-up: another waiter's create just landed, so the
            // entry is no older than now; no read needed.
            let written_ns = if woken {
                self.tally.wasted();
                now_ns()
            } else {
                match last(&self.kv, &name, budget).await {
                    // Refused, yet the leader has no message for the key: a create raced
                    // with a release or an age-out. Retry at once, but not in a tight loop
                    // should the two answers keep disagreeing.
                    Ok(Last::Free) => {
                        refused_free += 1;
                        if refused_free > 3 {
                            tokio::time::sleep(self.knobs.expiry_poll).await;
                        }
                        continue;
                    }
                    Ok(Last::Held { written_ns, .. }) => written_ns,
                    Err(e) => return Outcome::Fail(e),
                }
            };
            if let Err(e) = self.ensure_wake(key).await {
                return Outcome::Fail(e);
            }
            woken = self.wait(key, written_ns).await;
        }
    }

    async fn release(&mut self, grant: Grant<NatsHandle>) -> Outcome<()> {
        let held = grant.handle.revision();
        let budget = self.knobs.response_timeout;
        match within(budget, self.kv.stream.delete_message(held)).await {
            Some(Ok(true)) => {}
            Some(Ok(false)) => return Outcome::Info(ErrorKind::Other),
            Some(Err(e)) => {
                return match e.kind() {
                    DeleteMessageErrorKind::JetStream(j) if j.error_code().0 == NO_MESSAGE => {
                        Outcome::Fail(ErrorKind::LockLost)
                    }
                    DeleteMessageErrorKind::TimedOut => Outcome::Info(ErrorKind::Timeout),
                    DeleteMessageErrorKind::JetStream(_) | DeleteMessageErrorKind::Request => {
                        tracing::debug!("nats: release {}: {e}", grant.handle.key);
                        Outcome::Info(ErrorKind::Unavailable)
                    }
                };
            }
            None => return Outcome::Info(ErrorKind::Timeout),
        }
        // The lock is free; the wake-up only saves waiters their timer.
        if let Err(e) = self.client.publish(grant.handle.wake, "".into()).await {
            tracing::debug!("nats: wake-up after release: {e}");
        }
        Outcome::Ok(())
    }

    async fn renew(&mut self, grant: &Grant<NatsHandle>) -> Outcome<()> {
        let held = grant.handle.revision();
        let update = self
            .kv
            .update(&grant.handle.key, self.value.clone().into(), held);
        match within(self.knobs.response_timeout, update).await {
            Some(Ok(revision)) => {
                grant.handle.revision.store(revision, Ordering::Relaxed);
                Outcome::Ok(())
            }
            Some(Err(e)) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                Outcome::Fail(ErrorKind::LockLost)
            }
            Some(Err(e)) if e.kind() == UpdateErrorKind::TimedOut => {
                Outcome::Info(ErrorKind::Timeout)
            }
            Some(Err(e)) => {
                tracing::debug!("nats: renew {}: {e}", grant.handle.key);
                Outcome::Info(ErrorKind::Unavailable)
            }
            None => Outcome::Info(ErrorKind::Timeout),
        }
    }

    /// Every message this client's connection published: creates, renewals, deletes, reads
    /// (each a request) and wake-ups; what the servers count as the connection's `in_msgs`.
    fn requests_sent(&self) -> Option<u64> {
        Some(
            self.client
                .statistics()
                .out_messages
                .load(Ordering::Relaxed),
        )
    }

    async fn close(mut self) {
        for key in std::mem::take(&mut self.unsure) {
            self.clean_up(key).await;
        }
        self.wakes.clear();
        let _ = within(self.knobs.response_timeout, self.client.flush()).await;
    }

    /// Drops the connection and its subscriptions, deleting nothing: the entries age out.
    async fn abandon(self) {
        drop(self);
    }
}
