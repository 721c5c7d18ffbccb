//! The server-side observer: who PostgreSQL says holds each lock, read from `pg_locks`.
//!
//! Advisory locks push no notification, so the observer polls: every `observe_interval` it
//! reads the granted advisory locks of the run's namespace joined with `pg_stat_activity`,
//! whose `application_name` (`lockbench-c<id>`, set by every client at connect) names the
//! holder. It runs on a session of its own (`lockbench-observer`) on whichever server is the
//! read-write primary, so after a promotion it reads the new primary, where the old holders'
//! locks do not exist.
//!
//! Resolution: a change is seen up to one interval plus one round trip after it happened
//! (10 ms by default), which bounds the detection latencies derived from it. Each observation
//! carries `sent` (when the read was sent): the server's state is from some instant between
//! `sent` and `t`. Its reads carry no client tag, so the servers' counters
//! ([`crate::counters`]) leave them out and it reports none to the sink.
//!
//! While the observer has no session (the primary is down, paused or partitioned from it) or
//! a read does not answer within `response_timeout`, every key is `blind` until a read
//! succeeds again. A lock held by a session that is not a lockbench client (its
//! `application_name` names none) cannot be named: that key is blind too, rather than said to
//! be free.

use crate::knobs::PostgresKnobs;
use crate::session::Connector;
use lockbench_core::{ClientId, KeyId, Nanos, RunClock, ServerObservation, ServerSink};
use std::time::Duration;

/// The read: `(objid, application_name)` of every granted lock of the namespace.
const READ: &str = "SELECT l.objid::int8, a.application_name FROM pg_locks l \
     LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
     AND l.classid = $1::int4::oid AND l.objid < $2::int8::oid";

/// The `application_name` prefix clients use.
pub(crate) const CLIENT_NAME: &str = "lockbench-c";

/// What one key looked like: its holder, or blind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Holder(Option<ClientId>),
    Blind,
}

/// Polls `pg_locks` for keys `0..keys` until dropped (see the module docs).
pub(crate) async fn observe(
    connector: Connector,
    knobs: &PostgresKnobs,
    keys: u32,
    clock: RunClock,
    sink: ServerSink,
) -> Result<(), String> {
    let mut seen: Vec<Option<Seen>> = vec![None; keys as usize];
    let record = |seen: &mut Vec<Option<Seen>>, key: usize, now: Seen, sent: Option<Nanos>| {
        if seen[key] == Some(now) {
            return;
        }
        seen[key] = Some(now);
        let t = clock.now();
        sink.record(match now {
            Seen::Blind => ServerObservation::blind(t, KeyId(key as u32)),
            Seen::Holder(h) => ServerObservation {
                sent,
                ..ServerObservation::holder(t, KeyId(key as u32), h)
            },
        });
    };
    let ns = knobs.namespace;
    let limit = i64::from(keys);
    loop {
        let session = match connector.connect().await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("observer: {e}");
                for key in 0..seen.len() {
                    record(&mut seen, key, Seen::Blind, None);
                }
                tokio::time::sleep(knobs.observe_interval.max(Duration::from_millis(100))).await;
                continue;
            }
        };
        let read = match session.client.prepare(READ).await {
            Ok(r) => r,
            Err(e) => return Err(format!("observer: preparing its pg_locks read: {e}")),
        };
        loop {
            let sent = clock.now();
            let rows = tokio::time::timeout(
                knobs.response_timeout,
                session.client.query(&read, &[&ns, &limit]),
            )
            .await;
            let rows = match rows {
                Ok(Ok(rows)) => rows,
                Ok(Err(e)) => {
                    tracing::debug!("observer: {e}");
                    break;
                }
                Err(_) => break,
            };
            let mut now = vec![Seen::Holder(None); seen.len()];
            for row in rows {
                let objid: i64 = row.get(0);
                let name: Option<String> = row.get(1);
                let holder = name
                    .as_deref()
                    .and_then(|n| n.strip_prefix(CLIENT_NAME))
                    .and_then(|id| id.parse::<u32>().ok());
                if let Some(slot) = now.get_mut(objid as usize) {
                    *slot = match holder {
                        Some(id) => Seen::Holder(Some(ClientId(id))),
                        None => Seen::Blind,
                    };
                }
            }
            for (key, state) in now.into_iter().enumerate() {
                record(&mut seen, key, state, Some(sent));
            }
            tokio::time::sleep(knobs.observe_interval).await;
        }
        for key in 0..seen.len() {
            record(&mut seen, key, Seen::Blind, None);
        }
        session.abandon();
    }
}
