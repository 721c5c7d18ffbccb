//! Every statement a client sends, as text, and the tag that lets the server's counters find
//! them.
//!
//! Why the shapes:
//! - **Grant and token in one statement.** `WITH l AS MATERIALIZED (SELECT pg_advisory_lock(..))
//!   SELECT nextval(..) FROM l`: the CTE is evaluated first (it is materialized, so it is not
//!   folded into the outer query), and `nextval` runs once per row it returns, i.e. after the
//!   lock was granted, in the same session: one round trip per acquisition, and no token
//!   without its grant.
//! - **Locks are two int4 keys** `(namespace, key)`: `pg_locks` shows them as `classid`,
//!   `objid` with `objsubid = 2`, which is how the observer and `renew` find them.
//! - **One sequence for every key** ([`FENCE`]): a token is greater than every token handed out
//!   before it on any key, so it grows on each key too. Sequences are not transactional and
//!   are replicated asynchronously (in batches of 32 values): after a promotion the new primary
//!   may hand out a value an old grant already had.
//! - **The tag** ([`TAG`]) opens every client statement, so `pg_stat_statements` (which keeps
//!   the text) can sum the clients' calls and leave out the observer's and anyone else's.

/// The comment every client statement starts with.
pub const TAG: &str = "/* lockbench-client */";

/// The fencing sequence.
pub const FENCE: &str = "lockbench_fence";

/// Creates the fencing sequence where it is missing (run once per backend, by its first
/// client, in a transaction serialized by an advisory lock of its own, `(-1, -1)`, outside
/// every namespace, so that concurrent processes do not race on the catalog).
pub const SETUP: [&str; 4] = [
    "/* lockbench-client */ BEGIN",
    "/* lockbench-client */ SELECT pg_advisory_xact_lock(-1, -1)",
    "/* lockbench-client */ CREATE SEQUENCE IF NOT EXISTS lockbench_fence",
    "/* lockbench-client */ COMMIT",
];

/// `pg-advisory`: wait for the lock (up to `lock_timeout`), then draw the token.
pub const LOCK: &str = "/* lockbench-client */ WITH l AS MATERIALIZED \
     (SELECT pg_advisory_lock($1, $2)) SELECT nextval('lockbench_fence') FROM l";

/// `pg-try-advisory`: take the lock if it is free; the token when it was taken, else NULL.
pub const TRY_LOCK: &str = "/* lockbench-client */ WITH l AS MATERIALIZED \
     (SELECT pg_try_advisory_lock($1, $2) AS got) \
     SELECT CASE WHEN got THEN nextval('lockbench_fence') END FROM l";

/// `pg-advisory-xact`: the lock held by the open transaction, then the token.
pub const XACT_LOCK: &str = "/* lockbench-client */ WITH l AS MATERIALIZED \
     (SELECT pg_advisory_xact_lock($1, $2)) SELECT nextval('lockbench_fence') FROM l";

/// Releases a session-level lock: `false` when this session did not hold it.
pub const UNLOCK: &str = "/* lockbench-client */ SELECT pg_advisory_unlock($1, $2)";

/// Whether this session holds the lock now (what `renew` asks: there is nothing to extend).
pub const HOLDS: &str = "/* lockbench-client */ SELECT EXISTS (SELECT 1 FROM pg_locks \
     WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted \
     AND classid = $1::int4::oid AND objid = $2::int4::oid AND objsubid = 2)";

/// Opens the transaction that holds a `pg-advisory-xact` lock. `BEGIN`, `COMMIT` and
/// `ROLLBACK` go by the simple-query protocol: PostgreSQL 15's `pg_stat_statements` counted a
/// *prepared* `BEGIN` only on its first execution (measured: 38 calls for ~230 transactions),
/// which would break the counters' cross-check.
pub const BEGIN: &str = "/* lockbench-client */ BEGIN";
/// Releases a `pg-advisory-xact` lock.
pub const COMMIT: &str = "/* lockbench-client */ COMMIT";
/// Ends a transaction whose lock statement failed.
pub const ROLLBACK: &str = "/* lockbench-client */ ROLLBACK";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_statement_carries_the_tag() {
        let all = [
            LOCK, TRY_LOCK, XACT_LOCK, UNLOCK, HOLDS, BEGIN, COMMIT, ROLLBACK,
        ];
        for s in all.iter().chain(SETUP.iter()) {
            assert!(s.starts_with(TAG), "{s}");
        }
        assert!(SETUP[2].contains(FENCE) && LOCK.contains(FENCE));
    }
}
