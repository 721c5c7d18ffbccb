//! MariaDB's knobs (`[mariadb]`): defaults and validation live here, with the recipes that
//! read them.
//!
//! The one that decides safety is the session's `wait_timeout`. A named lock has no lease: it
//! lives as long as the session that took it, and the server ends a session that has been
//! silent for `wait_timeout` (MariaDB's default is eight hours; lockbench sets it per session,
//! so a run's dead holders are found in seconds). How long a dead holder's lock lives:
//!
//! - **killed** (the process exits, `abandon`): its socket closes and the server ends the
//!   session at once; the lock is free within a round trip.
//! - **partitioned** or **paused**: the server sees a silent session, and ends it
//!   `wait_timeout` after its last statement ([`MariadbKnobs::expiry`]), freeing the lock
//!   while the holder may still believe it holds it: a lease no one renews, with no token to
//!   fence the late writer.

use lockbench_core::knobs::{KnobSchema, KnobTable, Knobs, run_hash, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The named-lock recipes' knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MariadbKnobs {
    /// Budget for one server's TCP connect and login (each address is tried in turn).
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// `mariadb-get-lock`: how long one `GET_LOCK` waits in the server before it answers 0
    /// (the acquire fails `timeout`).
    #[serde(with = "humantime_serde")]
    pub lock_timeout: Duration,
    /// Budget for the reply to any other statement (release, renew, a poll), client side;
    /// past it the outcome is indeterminate and the session is dropped.
    #[serde(with = "humantime_serde")]
    pub response_timeout: Duration,
    /// `mariadb-try-lock`: after a refused `GET_LOCK(name, 0)` a waiter sleeps this long ...
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// ... plus a uniformly random extra up to this much (seeded per client).
    #[serde(with = "humantime_serde")]
    pub poll_jitter: Duration,
    /// The session's `wait_timeout`: a silent session, and its locks, end this long after
    /// its last statement (whole seconds).
    #[serde(with = "humantime_serde")]
    pub wait_timeout: Duration,
    /// Every lock's name starts with this (`<prefix>-<key>`), so runs with different
    /// prefixes never meet.
    pub prefix: String,
    /// How often the server-side observer asks who holds each lock: the resolution of the
    /// detection latencies it gives.
    #[serde(with = "humantime_serde")]
    pub observe_interval: Duration,
}

impl Default for MariadbKnobs {
    fn default() -> Self {
        MariadbKnobs {
            connect_timeout: Duration::from_secs(2),
            lock_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(2),
            poll_interval: Duration::from_millis(1),
            poll_jitter: Duration::from_millis(2),
            wait_timeout: Duration::from_secs(8),
            prefix: "lockbench".into(),
            observe_interval: Duration::from_millis(10),
        }
    }
}

impl MariadbKnobs {
    /// How long a silent (partitioned or paused) holder's session, and so its lock, lives on
    /// the server after its last statement. A killed holder's lock is freed at once.
    pub fn expiry(&self) -> Duration {
        self.wait_timeout
    }

    /// The name of key `key`'s lock.
    pub fn lock_name(&self, key: u32) -> String {
        format!("{}-{key}", self.prefix)
    }

    /// The tag every client statement carries as a column alias (`AS <tag>`), which the
    /// servers' statement digests keep: how the counters find this run's statements.
    pub fn tag(&self) -> String {
        format!("lb_{:08x}", run_hash(self.prefix.bytes()))
    }
}

impl KnobTable for MariadbKnobs {
    const NAME: &'static str = "mariadb";

    fn validate(&self) -> Result<(), ScenarioError> {
        let above_zero = [
            ("mariadb.connect_timeout", self.connect_timeout),
            ("mariadb.response_timeout", self.response_timeout),
            ("mariadb.observe_interval", self.observe_interval),
        ];
        for (field, d) in above_zero {
            if d.is_zero() {
                return Err(ScenarioError::new(field, "must be above zero"));
            }
        }
        if self.lock_timeout < Duration::from_millis(1) {
            return Err(ScenarioError::new(
                "mariadb.lock_timeout",
                "must be at least 1ms (GET_LOCK with 0 does not wait)",
            ));
        }
        if self.poll_interval.is_zero() && self.poll_jitter.is_zero() {
            return Err(ScenarioError::new(
                "mariadb.poll_interval",
                "poll_interval and poll_jitter cannot both be zero (waiters would spin)",
            ));
        }
        if self.wait_timeout.as_secs() == 0 || self.wait_timeout.subsec_nanos() != 0 {
            return Err(ScenarioError::new(
                "mariadb.wait_timeout",
                format!(
                    "must be a whole number of seconds, at least 1s (MariaDB's wait_timeout \
                     is in seconds), not {:?}",
                    self.wait_timeout
                ),
            ));
        }
        let name_ok = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if self.prefix.is_empty() || self.prefix.len() > 40 || !self.prefix.chars().all(name_ok) {
            return Err(ScenarioError::new(
                "mariadb.prefix",
                "must be 1 to 40 letters, digits, '-' or '_' (a lock name is at most 64 \
                 characters)",
            ));
        }
        Ok(())
    }
}

/// MariaDB's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<MariadbKnobs>()];

/// Gives the run `id` lock names of its own: the prefix gets a hash of `id`. Named locks die
/// with their sessions, so nothing is left for a later run; this is for runs at the same time
/// on the same servers (tests, two users).
pub fn separate_keys(knobs: &mut Knobs, id: &str) -> Result<(), String> {
    knobs.update(|k: &mut MariadbKnobs| {
        let base = k.prefix.chars().take(30).collect::<String>();
        k.prefix = format!("{base}-{:08x}", run_hash(id.bytes()));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_expiry_is_the_wait_timeout() {
        let k = MariadbKnobs::default();
        k.validate().unwrap();
        assert_eq!(k.expiry(), Duration::from_secs(8));
        assert_eq!(k.lock_name(3), "lockbench-3");
        assert!(k.tag().starts_with("lb_"));
    }

    #[test]
    fn validation_names_the_field() {
        let bad = MariadbKnobs {
            wait_timeout: Duration::from_millis(1500),
            ..MariadbKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("mariadb.wait_timeout"), "{e}");
        let bad = MariadbKnobs {
            prefix: "a'b".into(),
            ..MariadbKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("mariadb.prefix"), "{e}");
    }
}
