//! The servers' own count of lockbench's statements, from `pg_stat_statements`.
//!
//! Each server of the `postgres` group is read on a session of its own (`application_name =
//! lockbench-counters`), not through the recipes' read-write connection logic: after a
//! promotion the clients' statements are on two servers, and each keeps its own statistics.
//! Only statements that start with the run's tag ([`crate::sql::Statements::tag`], which
//! names its namespace) are summed, so the observer's polls, these reads, another run's
//! clients and anyone else's queries are not counted.
//!
//! What `pg_stat_statements` counts is *completed* statements: one that fails (a
//! `pg_advisory_lock` cancelled by `lock_timeout`, a statement of a session killed while it
//! waited) adds no call, while the client counted it when it sent it. Measured on PostgreSQL
//! 15: a `pg_advisory_lock` that ran into `lock_timeout` left `calls` unchanged. So the two
//! agree exactly only in a run without failed statements; the difference is the failed ones.
//!
//! A server's incarnation is its postmaster's start time and the statistics' last reset
//! (`pg_stat_statements_info.stats_reset`): either changes when its counts start again.

use crate::session::Connector;
use lockbench_core::{Incarnation, ServerCount, ServerCounters};
use std::time::Duration;

/// What the counters are read with (`$1`: the tag).
const READ: &str = "SELECT coalesce(sum(calls), 0)::int8, \
     pg_postmaster_start_time()::text || ' / ' || coalesce((SELECT stats_reset::text \
     FROM pg_stat_statements_info), '') \
     FROM pg_stat_statements WHERE starts_with(query, $1)";

/// Reads every server's count of client statements (each must answer).
pub(crate) async fn read(
    servers: &[(String, Connector)],
    tag: &str,
    budget: Duration,
) -> Result<ServerCounters, String> {
    let mut counts = Vec::new();
    for (address, connector) in servers {
        let session = connector.connect().await.map_err(|e| {
            format!(
                "reading pg_stat_statements: {e}; the counters need every server of the \
                     group (a server down at either reading makes the difference unknown)"
            )
        })?;
        let row = tokio::time::timeout(budget, session.client.query_one(READ, &[&tag]))
            .await
            .map_err(|_| {
                format!("postgres ({address}): pg_stat_statements did not answer within {budget:?}")
            })?
            .map_err(|e| {
                format!(
                    "postgres ({address}): reading pg_stat_statements: {e} (is the extension \
                     preloaded, shared_preload_libraries = 'pg_stat_statements', and created \
                     in the database?)"
                )
            })?;
        session.close().await;
        let calls: i64 = row.get(0);
        counts.push(ServerCount {
            server: format!("postgres ({address})"),
            requests: calls as u64,
            incarnation: Some(Incarnation::Id(row.get(1))),
        });
    }
    Ok(ServerCounters {
        source: format!(
            "postgres pg_stat_statements (calls of the statements tagged {tag}; failed \
             statements are not counted)"
        ),
        requests: counts.iter().map(|c| c.requests).sum(),
        servers: counts,
    })
}
