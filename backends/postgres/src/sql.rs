//! Every statement a client sends, as text, and the tag that lets the server's counters find
//! them.
//!
//! Why the shapes:
//! - **Grant and token in one statement.** `WITH lb.. AS MATERIALIZED (SELECT
//!   pg_advisory_lock(..)) SELECT nextval(..) FROM lb..`: the CTE is evaluated first (it is
//!   materialized, so it is not folded into the outer query), and `nextval` runs once per row it
//!   returns, i.e. after the lock was granted, in the same session: one round trip per
//!   acquisition, and no token without its grant.
//! - **Locks are two int4 keys** `(namespace, key)`: `pg_locks` shows them as `classid`,
//!   `objid` with `objsubid = 2`, which is how the observer and `renew` find them.
//! - **One sequence for every key** ([`FENCE`]): a token is greater than every token handed out
//!   before it on any key, so it grows on each key too. Sequences are not transactional and
//!   are replicated asynchronously, WAL-logged 32 values ahead: after a promotion the new
//!   primary continues from the last logged batch it received (measured here: 4203 before a
//!   promotion, 4236 after, with the replica caught up), and from an older one, handing out a
//!   value an earlier grant already had, when the last batch's WAL had not reached it.
//! - **Each namespace's statements are its own** (the tag [`Statements::tag`] names it, and
//!   every `SELECT` is a CTE named after it): `pg_stat_statements` keeps one entry per
//!   statement *shape* (constants and comments aside, the CTE's name counts), so two runs or
//!   tests with different namespaces are counted apart and a run's counters sum only its own
//!   clients' calls, not the observer's, the counters' reads or another run's.

/// The fencing sequence.
pub const FENCE: &str = "lockbench_fence";

/// The statements of one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statements {
    /// The comment every statement starts with: `/* lockbench-client ns=N */`.
    pub tag: String,
    /// Creates the fencing sequence where it is missing (run once per backend, by its first
    /// client, in a transaction serialized by an advisory lock of its own, `(-1, -1)`, outside
    /// every namespace, so that concurrent processes do not race on the catalog).
    pub setup: [String; 4],
    /// `pg-advisory`: wait for the lock (up to `lock_timeout`), then draw the token.
    pub lock: String,
    /// `pg-try-advisory`: take the lock if it is free; the token when it was taken, else NULL.
    pub try_lock: String,
    /// `pg-advisory-xact`: the lock held by the open transaction, then the token.
    pub xact_lock: String,
    /// Releases a session-level lock: `false` when this session did not hold it.
    pub unlock: String,
    /// Whether this session holds the lock now (what `renew` asks: there is nothing to
    /// extend).
    pub holds: String,
    /// Opens the transaction that holds a `pg-advisory-xact` lock. `BEGIN`, `COMMIT` and
    /// `ROLLBACK` go by the simple-query protocol: PostgreSQL 15's `pg_stat_statements`
    /// counted a *prepared* `BEGIN` only on its first execution (measured: 38 calls for ~230
    /// transactions), which would break the counters' cross-check.
    pub begin: String,
    /// Releases a `pg-advisory-xact` lock.
    pub commit: String,
    /// Ends a transaction whose lock statement failed.
    pub rollback: String,
}

impl Statements {
    /// The statements of `namespace`.
    pub fn new(namespace: i32) -> Statements {
        let tag = format!("/* lockbench-client ns={namespace} */");
        let cte = format!("lb{namespace}");
        let with = |select: &str, then: &str| {
            format!("{tag} WITH {cte} AS MATERIALIZED ({select}) SELECT {then} FROM {cte}")
        };
        Statements {
            setup: [
                format!("{tag} BEGIN"),
                with("SELECT pg_advisory_xact_lock(-1, -1)", "1"),
                format!("{tag} CREATE SEQUENCE IF NOT EXISTS {FENCE}"),
                format!("{tag} COMMIT"),
            ],
            lock: with(
                "SELECT pg_advisory_lock($1, $2)",
                &format!("nextval('{FENCE}')"),
            ),
            try_lock: with(
                "SELECT pg_try_advisory_lock($1, $2) AS got",
                &format!("CASE WHEN got THEN nextval('{FENCE}') END"),
            ),
            xact_lock: with(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &format!("nextval('{FENCE}')"),
            ),
            unlock: with("SELECT pg_advisory_unlock($1, $2) AS ok", "ok"),
            holds: with(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
                 AND pid = pg_backend_pid() AND granted AND classid = $1::int4::oid \
                 AND objid = $2::int4::oid AND objsubid = 2) AS held",
                "held",
            ),
            begin: format!("{tag} BEGIN"),
            commit: format!("{tag} COMMIT"),
            rollback: format!("{tag} ROLLBACK"),
            tag,
        }
    }

    /// Every statement.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        self.setup.iter().chain([
            &self.lock,
            &self.try_lock,
            &self.xact_lock,
            &self.unlock,
            &self.holds,
            &self.begin,
            &self.commit,
            &self.rollback,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_carries_its_namespaces_tag() {
        let s = Statements::new(7);
        assert_eq!(s.tag, "/* lockbench-client ns=7 */");
        for text in s.all() {
            assert!(text.starts_with(&s.tag), "{text}");
        }
        assert!(s.setup[2].contains(FENCE) && s.lock.contains(FENCE));
        // A namespace's tag is not the start of another's (ns=7 vs ns=70).
        assert!(!Statements::new(70).lock.starts_with(&s.tag));
    }

    #[test]
    fn every_select_is_named_after_its_namespace() {
        let s = Statements::new(12);
        for text in [
            &s.lock,
            &s.try_lock,
            &s.xact_lock,
            &s.unlock,
            &s.holds,
            &s.setup[1],
        ] {
            assert!(text.contains("WITH lb12 AS MATERIALIZED"), "{text}");
        }
    }
}
