//! PostgreSQL's knobs (`[postgres]`): defaults and validation live here, with the recipes that
//! read them (a system's settings belong to its crate, not to core).
//!
//! The ones that decide safety are the session's TCP keepalives. An advisory lock has no lease:
//! it lives as long as the session that took it. How long that is depends on how the holder
//! dies:
//!
//! - **killed** (the process exits, `abandon`): its socket closes, the server sees the FIN and
//!   ends the session at once; the lock is free within a round trip.
//! - **partitioned** (nothing arrives either way): the server notices only when its keepalive
//!   probes go unanswered: `tcp_keepalives_idle + tcp_keepalives_interval *
//!   tcp_keepalives_count` ([`PostgresKnobs::expiry`]). These are per-session settings, so each
//!   client sets them in its startup options. That bound is a recipe's `expiry`.
//! - **paused** (`SIGSTOP`, a long GC): the holder's kernel keeps answering the probes, so the
//!   session never ends and the lock is **never** freed while the pause lasts. The opposite
//!   failure of a lease: no overlap, but everyone else waits.

use lockbench_core::knobs::{KnobSchema, KnobTable, Knobs, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The advisory-lock recipes' knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostgresKnobs {
    /// The role clients connect as (the cluster trusts lockbench's addresses: no password).
    pub user: String,
    /// The database clients connect to.
    pub dbname: String,
    /// Budget for one server's TCP connect and startup (each address is tried in turn).
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// `pg-advisory`, `pg-advisory-xact`: the session's `lock_timeout`, how long one
    /// `pg_advisory_lock` waits before the server cancels it (the acquire fails `timeout`).
    #[serde(with = "humantime_serde")]
    pub lock_timeout: Duration,
    /// Budget for the reply to any other statement (release, renew, a poll), client side;
    /// past it the outcome is indeterminate and the session is dropped.
    #[serde(with = "humantime_serde")]
    pub response_timeout: Duration,
    /// `pg-try-advisory`: after a refused `pg_try_advisory_lock` a waiter sleeps this long ...
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// ... plus a uniformly random extra up to this much (seeded per client).
    #[serde(with = "humantime_serde")]
    pub poll_jitter: Duration,
    /// The session's `tcp_keepalives_idle`: silence before the server's first probe.
    #[serde(with = "humantime_serde")]
    pub tcp_keepalives_idle: Duration,
    /// The session's `tcp_keepalives_interval`: between unanswered probes.
    #[serde(with = "humantime_serde")]
    pub tcp_keepalives_interval: Duration,
    /// The session's `tcp_keepalives_count`: unanswered probes before the server drops it.
    pub tcp_keepalives_count: u32,
    /// The first of the two int4 keys of every lock (`pg_advisory_lock(namespace, key)`),
    /// so runs with different namespaces never meet; the key id is the second.
    pub namespace: i32,
    /// How often the server-side observer reads `pg_locks`: the resolution of the detection
    /// latencies it gives (a change is seen up to one interval plus a round trip late).
    #[serde(with = "humantime_serde")]
    pub observe_interval: Duration,
}

impl Default for PostgresKnobs {
    fn default() -> Self {
        PostgresKnobs {
            user: "postgres".into(),
            dbname: "lockbench".into(),
            connect_timeout: Duration::from_secs(2),
            lock_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(2),
            poll_interval: Duration::from_millis(1),
            poll_jitter: Duration::from_millis(2),
            tcp_keepalives_idle: Duration::from_secs(5),
            tcp_keepalives_interval: Duration::from_secs(1),
            tcp_keepalives_count: 3,
            namespace: 0x6c62,
            observe_interval: Duration::from_millis(10),
        }
    }
}

impl PostgresKnobs {
    /// How long a partitioned holder's session (and so its lock) lives on the server: the
    /// keepalive bound. A killed holder's lock is freed at once; a paused holder's never (see
    /// the module docs).
    pub fn expiry(&self) -> Duration {
        self.tcp_keepalives_idle + self.tcp_keepalives_interval * self.tcp_keepalives_count
    }

    /// The session settings every client sends in its startup packet (`-c name=value`):
    /// no statement is spent on them.
    pub(crate) fn startup_options(&self) -> String {
        format!(
            "-c lock_timeout={}ms -c tcp_keepalives_idle={} -c tcp_keepalives_interval={} \
             -c tcp_keepalives_count={}",
            self.lock_timeout.as_millis(),
            self.tcp_keepalives_idle.as_secs(),
            self.tcp_keepalives_interval.as_secs(),
            self.tcp_keepalives_count,
        )
    }
}

fn whole_seconds(field: &str, d: Duration) -> Result<(), ScenarioError> {
    if d.as_secs() == 0 || d.subsec_nanos() != 0 {
        return Err(ScenarioError::new(
            field,
            format!(
                "must be a whole number of seconds, at least 1s (PostgreSQL's keepalive \
                 settings are in seconds), not {d:?}"
            ),
        ));
    }
    Ok(())
}

impl KnobTable for PostgresKnobs {
    const NAME: &'static str = "postgres";

    fn validate(&self) -> Result<(), ScenarioError> {
        for (field, value) in [
            ("postgres.user", &self.user),
            ("postgres.dbname", &self.dbname),
        ] {
            if value.is_empty() || value.contains(char::is_whitespace) {
                return Err(ScenarioError::new(
                    field,
                    "must be a non-empty name without spaces",
                ));
            }
        }
        if self.connect_timeout.is_zero() {
            return Err(ScenarioError::new(
                "postgres.connect_timeout",
                "must be above zero",
            ));
        }
        if self.lock_timeout < Duration::from_millis(1) {
            return Err(ScenarioError::new(
                "postgres.lock_timeout",
                "must be at least 1ms (0 would make pg_advisory_lock wait forever)",
            ));
        }
        if self.response_timeout.is_zero() {
            return Err(ScenarioError::new(
                "postgres.response_timeout",
                "must be above zero",
            ));
        }
        if self.poll_interval.is_zero() && self.poll_jitter.is_zero() {
            return Err(ScenarioError::new(
                "postgres.poll_interval",
                "poll_interval and poll_jitter cannot both be zero (waiters would spin)",
            ));
        }
        whole_seconds("postgres.tcp_keepalives_idle", self.tcp_keepalives_idle)?;
        whole_seconds(
            "postgres.tcp_keepalives_interval",
            self.tcp_keepalives_interval,
        )?;
        if self.tcp_keepalives_count == 0 {
            return Err(ScenarioError::new(
                "postgres.tcp_keepalives_count",
                "must be at least 1",
            ));
        }
        if self.namespace < 0 {
            return Err(ScenarioError::new(
                "postgres.namespace",
                "must be 0 or above (pg_locks shows it as an unsigned oid)",
            ));
        }
        if self.observe_interval < Duration::from_millis(1) {
            return Err(ScenarioError::new(
                "postgres.observe_interval",
                "must be at least 1ms",
            ));
        }
        Ok(())
    }
}

/// PostgreSQL's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<PostgresKnobs>()];

/// Gives the run `id` a lock namespace of its own, derived from the configured one and `id`
/// (FNV-1a). Its locks die with their sessions, so nothing is left behind for a later run to
/// meet; this is for runs at the same time on the same servers (tests, two users): their
/// clients would queue on each other's locks, the observer would name the other run's
/// clients, and each run's counters would sum the other's statements (see `crate::sql`).
pub fn separate_keys(knobs: &mut Knobs, id: &str) -> Result<(), String> {
    knobs.update(|k: &mut PostgresKnobs| k.namespace = namespace_of(k.namespace, id))
}

fn namespace_of(base: i32, id: &str) -> i32 {
    let h = lockbench_core::knobs::run_hash(base.to_le_bytes().into_iter().chain(id.bytes()));
    // Non-negative, and never -1 (the fencing sequence's setup lock is `(-1, -1)`).
    (h & 0x7fff_ffff) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_expiry_is_the_keepalive_bound() {
        let k = PostgresKnobs::default();
        k.validate().unwrap();
        assert_eq!(k.expiry(), Duration::from_secs(5 + 3));
        assert_eq!(
            k.startup_options(),
            "-c lock_timeout=10000ms -c tcp_keepalives_idle=5 -c tcp_keepalives_interval=1 \
             -c tcp_keepalives_count=3"
        );
    }

    #[test]
    fn each_run_gets_its_own_valid_namespace() {
        let a = namespace_of(0x6c62, "run-a");
        let b = namespace_of(0x6c62, "run-b");
        assert_ne!(a, b);
        assert_eq!(a, namespace_of(0x6c62, "run-a"));
        for n in [a, b] {
            PostgresKnobs {
                namespace: n,
                ..PostgresKnobs::default()
            }
            .validate()
            .unwrap();
        }
    }

    #[test]
    fn validation_names_the_field() {
        let bad = PostgresKnobs {
            tcp_keepalives_idle: Duration::from_millis(1500),
            ..PostgresKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("postgres.tcp_keepalives_idle"), "{e}");
        let bad = PostgresKnobs {
            lock_timeout: Duration::ZERO,
            ..PostgresKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("postgres.lock_timeout"), "{e}");
        let bad = PostgresKnobs {
            namespace: -1,
            ..PostgresKnobs::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("postgres.namespace")
        );
    }
}
