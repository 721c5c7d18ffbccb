//! NATS's knobs (`[nats]`): defaults and validation live here, with the recipe that reads
//! them.
//!
//! The one that decides safety is `ttl`, the bucket's `max_age`. On 2.9 a KV entry has no TTL
//! of its own: the stream deletes every message older than `max_age`, so a lock entry dies
//! `ttl` after it was last *written*. A holder that renews rewrites it (an `update` expecting
//! its own revision), which makes a new message and starts its age again. A paused or
//! partitioned holder stops renewing and loses the lock `ttl` after its last write, whether
//! or not it is still working: the lease failure Kleppmann describes, which only the fencing
//! token (the revision) guards against.
//!
//! `max_age` belongs to the bucket, not to a key: a run sets the bucket's `max_age` to its own
//! `ttl` when it opens it ([`crate::bucket`]), which changes it for every entry in it. Runs
//! one after another share the bucket `lockbench` (the one whose leader the `leader` fault
//! target names); runs at the same time with different `ttl`s need different buckets (the
//! tests each use their own). Runs on the same bucket are kept apart by a key prefix of their
//! own ([`separate_keys`]).

use lockbench_core::knobs::{KnobSchema, KnobTable, Knobs, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The bucket runs use unless a scenario names another: the one the `leader` fault target
/// asks about.
pub const DEFAULT_BUCKET: &str = "lockbench";

/// The `nats-kv` recipe's knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsKnobs {
    /// The bucket (its stream is `KV_<bucket>`).
    pub bucket: String,
    /// The bucket's `max_age`: how long an entry (a held lock) lives after its last write.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// The bucket's replicas (3: every server of the managed cluster holds every entry).
    pub replicas: u8,
    /// Every key of a run starts with this (`<prefix>.k<id>`); [`separate_keys`] gives each
    /// run its own.
    pub prefix: String,
    /// Budget for a connect to the servers.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// Budget for one request's reply (a create, an update, a delete, a read); past it the
    /// outcome is indeterminate.
    #[serde(with = "humantime_serde")]
    pub response_timeout: Duration,
    /// A waiter whose holder's entry is `ttl` old retries this often until the server has
    /// removed it (an entry that ages out announces nothing; the server removes it on its own
    /// timer, which may run a little after `max_age`).
    #[serde(with = "humantime_serde")]
    pub expiry_poll: Duration,
    /// How often the server-side observer reads each key from the stream leader.
    #[serde(with = "humantime_serde")]
    pub observe_interval: Duration,
}

impl Default for NatsKnobs {
    fn default() -> Self {
        NatsKnobs {
            bucket: DEFAULT_BUCKET.into(),
            ttl: Duration::from_secs(10),
            replicas: 3,
            prefix: "locks".into(),
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(2),
            expiry_poll: Duration::from_millis(100),
            observe_interval: Duration::from_millis(10),
        }
    }
}

/// `true` for a non-empty name of `[A-Za-z0-9_-]` (a bucket's, a key token's).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl KnobTable for NatsKnobs {
    const NAME: &'static str = "nats";

    fn validate(&self) -> Result<(), ScenarioError> {
        if !is_token(&self.bucket) {
            return Err(ScenarioError::new(
                "nats.bucket",
                "must be a non-empty name of letters, digits, `_` and `-` (a bucket name)",
            ));
        }
        if !self.prefix.split('.').all(is_token) {
            return Err(ScenarioError::new(
                "nats.prefix",
                "must be dot-separated tokens of letters, digits, `_` and `-` (a key prefix)",
            ));
        }
        if self.ttl < Duration::from_millis(100)
            || !self.ttl.subsec_nanos().is_multiple_of(1_000_000)
        {
            return Err(ScenarioError::new(
                "nats.ttl",
                "must be whole milliseconds, at least 100ms (the bucket's max_age)",
            ));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(ScenarioError::new(
                "nats.replicas",
                "must be 1 to 5 (JetStream's limit)",
            ));
        }
        for (field, d) in [
            ("nats.connect_timeout", self.connect_timeout),
            ("nats.response_timeout", self.response_timeout),
            ("nats.expiry_poll", self.expiry_poll),
            ("nats.observe_interval", self.observe_interval),
        ] {
            if d < Duration::from_millis(1) {
                return Err(ScenarioError::new(field, "must be at least 1ms"));
            }
        }
        Ok(())
    }
}

/// NATS's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<NatsKnobs>()];

/// Gives the run `id` a key prefix of its own (`<prefix>.r<hash>`): entries outlive their
/// holders by up to `ttl`, so a run must not meet the keys an earlier one left, and two runs
/// at once must not queue on each other's locks, nor count each other's messages (the
/// counters sum the connections named after the prefix).
pub fn separate_keys(knobs: &mut Knobs, id: &str) -> Result<(), String> {
    knobs.update(|k: &mut NatsKnobs| {
        k.prefix = format!(
            "{}.r{:08x}",
            k.prefix,
            lockbench_core::knobs::run_hash(id.bytes())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        NatsKnobs::default().validate().unwrap();
    }

    #[test]
    fn each_run_gets_its_own_valid_prefix() {
        let mut a = Knobs::default();
        a.fill(KNOBS).unwrap();
        let mut b = a.clone();
        separate_keys(&mut a, "run-a").unwrap();
        separate_keys(&mut b, "run-b").unwrap();
        let (a, b): (NatsKnobs, NatsKnobs) = (a.get().unwrap(), b.get().unwrap());
        assert_ne!(a.prefix, b.prefix);
        assert!(a.prefix.starts_with("locks.r"), "{}", a.prefix);
        a.validate().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let bad = NatsKnobs {
            bucket: "a.b".into(),
            ..NatsKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("nats.bucket"), "{e}");
        let bad = NatsKnobs {
            ttl: Duration::from_micros(1_500_500),
            ..NatsKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("nats.ttl"), "{e}");
        let bad = NatsKnobs {
            prefix: "a..b".into(),
            ..NatsKnobs::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("nats.prefix"), "{e}");
    }
}
