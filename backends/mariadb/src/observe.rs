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
use lockbench_core::{ClientId, HolderRecorder, RunClock, ServerSink};
use mysql_async::prelude::Queryable;
use std::time::Duration;

/// The `@lockbench_client` prefix clients use.
pub(crate) const CLIENT_NAME: &str = "lockbench-c";

/// The read: `(key, @lockbench_client)` of every held lock of keys `0..keys`.
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
    let mut seen = HolderRecorder::new(keys, clock, sink);
    let sql = read_sql(knobs, keys);
    loop {
        let mut conn = match connector.connect().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("observer: {e}");
                seen.blind_all();
                tokio::time::sleep(knobs.observe_interval.max(Duration::from_millis(100))).await;
                continue;
            }
        };
        loop {
            let sent = clock.now();
            let read = conn.query::<(u32, Option<String>), _>(sql.as_str());
            let rows = match tokio::time::timeout(knobs.response_timeout, read).await {
                Ok(Ok(rows)) => rows,
                Ok(Err(e)) => {
                    tracing::debug!("observer: {e}");
                    break;
                }
                Err(_) => break,
            };
            // Who holds each key: a client of the run, nobody, or a session it cannot name.
            let mut now: Vec<Option<Option<ClientId>>> = vec![Some(None); keys as usize];
            for (key, name) in rows {
                let holder = name
                    .as_deref()
                    .and_then(|n| n.strip_prefix(CLIENT_NAME))
                    .and_then(|id| id.parse::<u32>().ok());
                if let Some(slot) = now.get_mut(key as usize) {
                    *slot = holder.map(|id| Some(ClientId(id)));
                }
            }
            for (key, state) in now.into_iter().enumerate() {
                match state {
                    Some(holder) => seen.polled(key, holder, sent),
                    None => seen.blind(key),
                }
            }
            tokio::time::sleep(knobs.observe_interval).await;
        }
        seen.blind_all();
    }
}
