//! The server-side observer of the Redis recipes: who Redis says holds each lock, i.e. the
//! lock key's value (`redis-setnx`, `redis-pubsub`, `redis-broken-nonx`), or the value a
//! majority of the servers holds (`redlock`).
//!
//! Per server, connections of its own: a pub/sub connection `PSUBSCRIBE`d to the lock keys'
//! keyspace channels (`notify-keyspace-events` is set to `Kg$xe` by the observer, so every
//! `SET`, `DEL`, `PEXPIRE` and expiry of a lock key is announced, and restored to what it was
//! when the observer is dropped), and a command connection that answers each announcement with
//! `GET` + `PTTL` of that key. The value names the holder (its first 8 hex digits are the
//! client id, `value::Nonce`); the TTL gives `expires`, so a key that runs out is seen to be
//! held by no one from its deadline on, not from the moment Redis gets round to deleting it.
//! Every [`PROBE`] all keys are read again: a server that does not answer within
//! [`SILENCE`] is blind (and so is a key whose majority depends on blind servers) until its
//! connections are open again.
//!
//! None of these commands is among those the recipes' server counters sum (`evalsha`,
//! `script|load`, `set`, `subscribe`, `unsubscribe`), so the observer changes no count.

use crate::connect::{Server, config};
use crate::value::KeyTable;
use futures::StreamExt;
use lockbench_core::server_view::parse_client_hex;
use lockbench_core::{ClientId, KeyId, Nanos, RunClock, ServerObservation, ServerSink};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often every key is read again.
const PROBE: Duration = Duration::from_millis(500);
/// A server that does not answer a read within this is blind.
const SILENCE: Duration = Duration::from_millis(1000);
/// Two expiry estimates of one holding closer than this are the same expiry read twice.
const SAME_EXPIRY: Duration = Duration::from_millis(25);
/// The keyspace events the observer needs: keyspace channel, generic (`DEL`, `PEXPIRE`),
/// string (`SET`), expired and evicted.
const EVENTS: &str = "Kg$xe";

/// What was recorded for a key: holder, expiry, blind.
type Seen = (Option<ClientId>, Option<Nanos>, bool);

/// One server's view of one key: `None` = blind.
type Slot = Option<(Option<ClientId>, Option<Nanos>)>;

/// Watches the lock keys `0..keys` on `servers` (a majority of `quorum` names the holder)
/// until dropped.
pub(crate) async fn observe(
    servers: Vec<Server>,
    names: Arc<KeyTable>,
    keys: u32,
    quorum: usize,
    clock: RunClock,
    sink: ServerSink,
) -> Result<(), String> {
    let shared = Arc::new(Shared {
        slots: Mutex::new(vec![vec![None; servers.len()]; keys as usize]),
        sent: Mutex::new(vec![vec![Nanos(0); servers.len()]; keys as usize]),
        seen: Mutex::new(vec![None; keys as usize]),
        quorum,
        clock,
        sink,
    });
    let tasks = servers.into_iter().enumerate().map(|(i, server)| {
        let shared = shared.clone();
        let names = names.clone();
        async move { follow(i, server, names, keys, shared).await }
    });
    futures::future::join_all(tasks).await;
    Ok(())
}

/// What the per-server tasks share: every server's view of every key, and what was recorded.
struct Shared {
    slots: Mutex<Vec<Vec<Slot>>>,
    /// When each slot's read was sent.
    sent: Mutex<Vec<Vec<Nanos>>>,
    seen: Mutex<Vec<Option<Seen>>>,
    quorum: usize,
    clock: RunClock,
    sink: ServerSink,
}

impl Shared {
    /// Server `server`'s view of `key` is `slot`, read with a request sent at `sent`.
    fn set(&self, key: usize, server: usize, mut slot: Slot, sent: Nanos) {
        // Every server's state holds from its read on: the whole row is known from the
        // latest of them.
        let since = {
            let mut all = self.sent.lock().expect("observer sent");
            let Some(row) = all.get_mut(key) else {
                return;
            };
            row[server] = sent;
            row.iter().copied().max().unwrap_or(sent)
        };
        let state = {
            let mut slots = self.slots.lock().expect("observer slots");
            let Some(row) = slots.get_mut(key) else {
                return;
            };
            keep_estimate(&mut slot, row[server]);
            row[server] = slot;
            majority(row, self.quorum)
        };
        let mut seen = self.seen.lock().expect("observer seen");
        if seen[key] == Some(state) {
            return;
        }
        seen[key] = Some(state);
        let (holder, expires, blind) = state;
        self.sink.record(ServerObservation {
            expires,
            blind,
            sent: (!blind).then_some(since),
            ..ServerObservation::holder(self.clock.now(), KeyId(key as u32), holder)
        });
    }
}

/// A key read again with the same holder gives an expiry estimate that differs from the last
/// by the reads' latency, not because anything changed; keep the earlier estimate then, so
/// the expiry does not wander (and a Redlock majority seem to come back). A renewal moves the
/// expiry by more than [`SAME_EXPIRY`].
fn keep_estimate(new: &mut Slot, old: Slot) {
    if let (Some((holder, Some(e))), Some((was, Some(before)))) = (new.as_mut(), old)
        && *holder == was
        && e.0.abs_diff(before.0) < SAME_EXPIRY.as_nanos() as u64
    {
        *e = before;
    }
}

/// The holder a `quorum` of the servers agree on, and until when that many hold it (the
/// `quorum`-th latest expiry among them); blind when the blind servers could change it.
fn majority(row: &[Slot], quorum: usize) -> Seen {
    let blind = row.iter().filter(|s| s.is_none()).count();
    let mut candidates: Vec<ClientId> = row.iter().flatten().filter_map(|(c, _)| *c).collect();
    candidates.sort();
    candidates.dedup();
    for c in candidates {
        let mut expiries: Vec<Option<Nanos>> = row
            .iter()
            .flatten()
            .filter(|(h, _)| *h == Some(c))
            .map(|(_, e)| *e)
            .collect();
        if expiries.len() >= quorum {
            // `None` (no TTL) sorts first: put it last, as the latest expiry of all.
            expiries.sort_by_key(|e| std::cmp::Reverse(e.map_or(u64::MAX, |n| n.0)));
            return (Some(c), expiries[quorum - 1], false);
        }
        if expiries.len() + blind >= quorum {
            return (None, None, true);
        }
    }
    (None, None, blind >= quorum)
}

/// One server: connect, subscribe, read on every announcement and every probe; on any failure
/// mark its keys blind and start again.
async fn follow(
    index: usize,
    server: Server,
    names: Arc<KeyTable>,
    keys: u32,
    shared: Arc<Shared>,
) {
    let mut restore: Option<Restore> = None;
    loop {
        if let Err(e) = watch(index, &server, &names, keys, &shared, &mut restore).await {
            tracing::warn!(server = %server.address, error = %e, "redis observer: lost its view");
        }
        for key in 0..keys as usize {
            shared.set(key, index, None, shared.clock.now());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn watch(
    index: usize,
    server: &Server,
    names: &KeyTable,
    keys: u32,
    shared: &Shared,
    restore: &mut Option<Restore>,
) -> Result<(), String> {
    let mut conn = server
        .connect(&config(SILENCE))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    if restore.is_none() {
        let (_, before): (String, String) = redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events")
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("CONFIG GET: {e}"))?;
        *restore = Some(Restore {
            server: server.clone(),
            before,
        });
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(EVENTS)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| format!("CONFIG SET: {e}"))?;
    let mut pubsub = server.pubsub().await.map_err(|e| format!("pub/sub: {e}"))?;
    let channel_prefix = "__keyspace@0__:";
    let pattern = format!("{channel_prefix}{}*", names.lock_prefix());
    pubsub
        .psubscribe(&pattern)
        .await
        .map_err(|e| format!("PSUBSCRIBE: {e}"))?;
    let mut messages = pubsub.into_on_message();
    let mut probe = tokio::time::interval(PROBE);
    loop {
        let key = tokio::select! {
            message = messages.next() => {
                let Some(message) = message else {
                    return Err("pub/sub connection closed".into());
                };
                let name = message.get_channel_name();
                match name.strip_prefix(channel_prefix).and_then(|n| names.key_of(n)) {
                    Some(key) if key.0 < keys => Some(key),
                    _ => continue,
                }
            }
            _ = probe.tick() => None,
        };
        let read: Vec<KeyId> = match key {
            Some(key) => vec![key],
            None => (0..keys).map(KeyId).collect(),
        };
        for key in read {
            let lock = names.lock(key);
            let sent = shared.clock.now();
            let (value, pttl): (Option<Vec<u8>>, i64) = redis::pipe()
                .cmd("GET")
                .arg(lock.as_ref())
                .cmd("PTTL")
                .arg(lock.as_ref())
                .query_async(&mut conn)
                .await
                .map_err(|e| format!("GET/PTTL: {e}"))?;
            let now = shared.clock.now();
            let slot = match value {
                Some(v) => (
                    parse_client_hex(&v),
                    (pttl >= 0).then(|| now.after(Duration::from_millis(pttl as u64))),
                ),
                None => (None, None),
            };
            shared.set(key.0 as usize, index, Some(slot), sent);
        }
    }
}

/// Puts `notify-keyspace-events` back as it was, when the observer is dropped.
struct Restore {
    server: Server,
    before: String,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let (server, before) = (self.server.clone(), std::mem::take(&mut self.before));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Ok(mut conn) = server.connect(&config(SILENCE)).await {
                    let _ = redis::cmd("CONFIG")
                        .arg("SET")
                        .arg("notify-keyspace-events")
                        .arg(before)
                        .query_async::<()>(&mut conn)
                        .await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(c: u32, expires: u64) -> Slot {
        Some((Some(ClientId(c)), Some(Nanos(expires))))
    }

    #[test]
    fn a_second_read_of_the_same_holding_keeps_the_first_estimate() {
        let mut again = held(1, 1_000_000_000 + 3_000_000);
        keep_estimate(&mut again, held(1, 1_000_000_000));
        assert_eq!(again, held(1, 1_000_000_000));
        let mut renewed = held(1, 1_500_000_000);
        keep_estimate(&mut renewed, held(1, 1_000_000_000));
        assert_eq!(renewed, held(1, 1_500_000_000));
        let mut other = held(2, 1_000_000_001);
        keep_estimate(&mut other, held(1, 1_000_000_000));
        assert_eq!(other, held(2, 1_000_000_001));
    }

    #[test]
    fn a_majority_names_the_holder_until_its_quorum_th_expiry() {
        let row = [
            held(1, 50),
            held(1, 30),
            held(1, 40),
            held(2, 99),
            Some((None, None)),
        ];
        assert_eq!(
            majority(&row, 3),
            (Some(ClientId(1)), Some(Nanos(30)), false)
        );
        let row = [
            held(1, 50),
            held(1, 30),
            held(2, 40),
            held(2, 99),
            Some((None, None)),
        ];
        assert_eq!(majority(&row, 3), (None, None, false));
        let row = [
            held(1, 50),
            held(1, 30),
            None,
            held(2, 99),
            Some((None, None)),
        ];
        assert_eq!(
            majority(&row, 3),
            (None, None, true),
            "the blind one could decide"
        );
        assert_eq!(
            majority(&[held(4, 10)], 1),
            (Some(ClientId(4)), Some(Nanos(10)), false)
        );
        assert_eq!(majority(&[None], 1), (None, None, true));
    }
}
