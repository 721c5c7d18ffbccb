//! The servers' own count of lockbench's statements, from `performance_schema`'s statement
//! digests.
//!
//! Every client statement carries the run's tag as a column alias (`AS lb_<hash>`,
//! [`crate::MariadbKnobs::tag`]). A digest replaces literals by `?` but keeps identifiers,
//! so this run's statements have digests of their own, which the observer's reads, these
//! reads and anyone else's queries do not share. Each server is read on a session of its own:
//! after a promotion the clients' statements are on two servers, each with its own
//! statistics.
//!
//! A digest counts every statement the server ran, refused ones too; a statement the client
//! gave up on (a timeout) is counted once the server finishes it. The sessions' own setup
//! (`SET SESSION wait_timeout`, `SELECT @@read_only`) carries no tag: the client does not count
//! it either.
//!
//! A server's incarnation is the time it started (now less its uptime): its counts start again
//! when it restarts.
//!
//! The digest table holds 10,000 digests (`performance-schema-digests-size`) and a run's
//! statements make three or four; once a long-lived server has seen a few thousand runs with
//! lock names of their own, a new run's statements land in the table's overflow row, its count
//! reads 0, and the run's cross-check says the two counts disagree. Restarting the server
//! empties the table.

use crate::session::Connector;
use lockbench_core::{Incarnation, ServerCount, ServerCounters};
use mysql_async::prelude::Queryable;
use std::time::Duration;

/// Reads every server's count of client statements (each must answer).
pub(crate) async fn read(
    connector: &Connector,
    tag: &str,
    budget: Duration,
) -> Result<ServerCounters, String> {
    let sql = format!(
        "SELECT CAST(COALESCE(SUM(COUNT_STAR), 0) AS SIGNED), \
         CAST(UNIX_TIMESTAMP() - (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME = 'UPTIME') AS SIGNED) \
         FROM performance_schema.events_statements_summary_by_digest \
         WHERE LOCATE('`{tag}`', DIGEST_TEXT) > 0"
    );
    let mut counts = Vec::new();
    for address in &connector.addresses {
        let mut conn = connector.connect_to(address).await.map_err(|e| {
            format!(
                "reading performance_schema: {e}; the counters need every server of the \
                 group (a server down at either reading makes the difference unknown)"
            )
        })?;
        let row = tokio::time::timeout(budget, conn.query_first::<(i64, i64), _>(sql.as_str()))
            .await
            .map_err(|_| format!("mariadb ({address}): no answer within {budget:?}"))?
            .map_err(|e| format!("mariadb ({address}): reading the statement digests: {e}"))?
            .ok_or_else(|| format!("mariadb ({address}): the digests' sum returned no row"))?;
        let _ = tokio::time::timeout(budget, conn.disconnect()).await;
        counts.push(ServerCount {
            server: format!("mariadb ({address})"),
            requests: row.0 as u64,
            incarnation: Some(Incarnation::Id(format!("started at {}", row.1))),
        });
    }
    Ok(ServerCounters {
        source: format!("mariadb performance_schema (statements whose digest has the alias {tag})"),
        requests: counts.iter().map(|c| c.requests).sum(),
        servers: counts,
    })
}
