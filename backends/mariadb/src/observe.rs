//! The server-side observer: who MariaDB says holds each lock.
//!
//! Named locks push no notification, so the observer polls: every `observe_interval` it asks
//! `IS_USED_LOCK` of every key's lock (the holder's connection id) joined, through
//! `performance_schema.threads`, with `performance_schema.user_variables_by_thread`, whose
//! `lockbench_client` (`lockbench-c<id>`, set by every client at login) names the holder. It runs on a session of its own
//! (`lockbench-observer`) on whichever server is the primary, so after a promotion it reads
//! the new primary, where the old holders' locks do not exist.
//!
//! Resolution: a change is seen up to one interval plus one round trip after it happened
//! (10 ms by default). Each observation carries `sent` (when the read was sent). Its reads
//! carry no tag, so the servers' counters leave them out.
//!
//! While the observer has no session (the primary is down, paused or partitioned from it) or
//! a read does not answer within `response_timeout`, every key is `blind` until a read
//! succeeds again. A lock held by a session that is not a lockbench client cannot be named:
//! that key is blind too, rather than said to be free.

use crate::knobs::MariadbKnobs;
use crate::session::Connector;
use lockbench_core::{ClientId, KeyId, Nanos, RunClock, ServerObservation, ServerSink};
use mysql_async::prelude::Queryable;
use std::time::Duration;

/// The `@lockbench_client` prefix clients use.
pub(crate) const CLIENT_NAME: &str = "lockbench-c";

/// What one key looked like: its holder, or blind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Holder(Option<ClientId>),
    Blind,
}

/// The read: `(key, program_name)` of every held lock of keys `0..keys`.
fn read_sql(knobs: &MariadbKnobs, keys: u32) -> String {
    let each: Vec<String> = (0..keys)
        .map(|k| {
            format!(
                "SELECT {k} AS k, IS_USED_LOCK('{}') AS id",
                knobs.lock_name(k)
            )
        })
        .collect();
    format!(
        "SELECT l.k, v.VARIABLE_VALUE FROM ({}) l \
         LEFT JOIN performance_schema.threads t ON t.PROCESSLIST_ID = l.id \
         LEFT JOIN performance_schema.user_variables_by_thread v ON v.THREAD_ID = t.THREAD_ID \
         AND v.VARIABLE_NAME = 'lockbench_client' WHERE l.id IS NOT NULL",
        each.join(" UNION ALL ")
    )
}

/// Polls the primary for keys `0..keys` until dropped (see the module docs).
pub(crate) async fn observe(
    connector: Connector,
    knobs: &MariadbKnobs,
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
    let sql = read_sql(knobs, keys);
    loop {
        let mut conn = match connector.connect().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("observer: {e}");
                for key in 0..seen.len() {
                    record(&mut seen, key, Seen::Blind, None);
                }
                tokio::time::sleep(knobs.observe_interval.max(Duration::from_millis(100))).await;
                continue;
            }
        };
        loop {
            let sent = clock.now();
            let rows = tokio::time::timeout(
                knobs.response_timeout,
                conn.query::<(u32, Option<String>), _>(sql.as_str()),
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
            for (key, name) in rows {
                let holder = name
                    .as_deref()
                    .and_then(|n| n.strip_prefix(CLIENT_NAME))
                    .and_then(|id| id.parse::<u32>().ok());
                if let Some(slot) = now.get_mut(key as usize) {
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
    }
}
