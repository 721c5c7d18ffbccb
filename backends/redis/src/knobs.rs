//! Redis's knobs (`[redis]` for the single-server recipes, `[redlock]` for Redlock): defaults
//! and validation live here, with the recipes that read them (a system's settings belong
//! to its crate, not to core).

use lockbench_core::knobs::{KnobSchema, KnobTable, Knobs, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Redis `SET NX` recipe knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedisKnobs {
    /// The lock's TTL (`PX`).
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// Waiters poll: after a refused `SET NX` they sleep this long ...
    #[serde(with = "humantime_serde")]
    pub retry_delay: Duration,
    /// ... plus a uniformly random extra up to this much.
    #[serde(with = "humantime_serde")]
    pub retry_jitter: Duration,
    /// Budget for one request's reply.
    #[serde(with = "humantime_serde")]
    pub response_timeout: Duration,
    /// Key prefix for locks.
    pub prefix: String,
    /// The commands the servers' request count sums (`INFO commandstats`, as in
    /// `counted = ["set", "evalsha", "script|load"]`); empty: the recipe's own, the commands its
    /// clients send themselves. A lock library's adapter names what the library sends (its
    /// manifest's `[counters]`): commands a script calls inside Redis are counted by Redis too,
    /// so only commands no script of the library calls belong here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<String>,
}

impl Default for RedisKnobs {
    fn default() -> Self {
        RedisKnobs {
            ttl: Duration::from_secs(10),
            retry_delay: Duration::from_millis(1),
            retry_jitter: Duration::from_millis(2),
            response_timeout: Duration::from_secs(1),
            prefix: "lockbench:".into(),
            counted: Vec::new(),
        }
    }
}

impl KnobTable for RedisKnobs {
    const NAME: &'static str = "redis";

    fn validate(&self) -> Result<(), ScenarioError> {
        if self.ttl < Duration::from_millis(1) {
            return Err(ScenarioError::new("redis.ttl", "must be at least 1ms"));
        }
        if self.response_timeout.is_zero() {
            return Err(ScenarioError::new(
                "redis.response_timeout",
                "must be above zero",
            ));
        }
        if let Some(c) = self
            .counted
            .iter()
            .find(|c| c.is_empty() || c.chars().any(|ch| !(ch.is_ascii_lowercase() || ch == '|')))
        {
            return Err(ScenarioError::new(
                "redis.counted",
                format!(
                    "`{c}` is no command name as INFO commandstats writes it (lowercase, a \
                     subcommand after `|`: `set`, `evalsha`, `script|load`)"
                ),
            ));
        }
        Ok(())
    }
}

/// Redlock knobs (Redis's published algorithm).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedlockKnobs {
    /// The lock's TTL on each server.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// How long to wait for one server's answer before counting it as a no.
    #[serde(with = "humantime_serde")]
    pub node_timeout: Duration,
    /// After a failed attempt, wait this long ...
    #[serde(with = "humantime_serde")]
    pub retry_delay: Duration,
    /// ... plus a uniformly random extra up to this much (breaks split votes).
    #[serde(with = "humantime_serde")]
    pub retry_jitter: Duration,
    /// Clock drift allowance as a fraction of the TTL (added to a 2 ms constant).
    pub drift_factor: f64,
    /// Key prefix for locks.
    pub prefix: String,
}

impl Default for RedlockKnobs {
    fn default() -> Self {
        RedlockKnobs {
            ttl: Duration::from_secs(10),
            node_timeout: Duration::from_millis(50),
            retry_delay: Duration::from_millis(2),
            retry_jitter: Duration::from_millis(20),
            drift_factor: 0.01,
            prefix: "lockbench:".into(),
        }
    }
}

impl KnobTable for RedlockKnobs {
    const NAME: &'static str = "redlock";

    fn validate(&self) -> Result<(), ScenarioError> {
        if !(0.0..0.5).contains(&self.drift_factor) {
            return Err(ScenarioError::new(
                "redlock.drift_factor",
                "must be in [0, 0.5)",
            ));
        }
        if self.node_timeout.is_zero() || self.node_timeout >= self.ttl {
            return Err(ScenarioError::new(
                "redlock.node_timeout",
                "must be above zero and well below redlock.ttl",
            ));
        }
        Ok(())
    }
}

/// Redis's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<RedisKnobs>(), schema::<RedlockKnobs>()];

/// Moves the run's Redis and Redlock keys under `id` (a key an acquire cut short lives until
/// its TTL, so a run must not meet another run's).
pub fn separate_keys(knobs: &mut Knobs, id: &str) -> Result<(), String> {
    knobs.update(|k: &mut RedisKnobs| k.prefix = format!("{}{id}:", k.prefix))?;
    knobs.update(|k: &mut RedlockKnobs| k.prefix = format!("{}{id}:", k.prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `counted` takes command names as `INFO commandstats` writes them, and names itself when
    /// one is not.
    #[test]
    fn counted_commands_are_commandstats_names() {
        let ok = RedisKnobs {
            counted: vec!["set".into(), "script|load".into()],
            ..RedisKnobs::default()
        };
        assert!(ok.validate().is_ok());
        for bad in ["SET", "", "eval sha"] {
            let knobs = RedisKnobs {
                counted: vec![bad.into()],
                ..RedisKnobs::default()
            };
            let err = knobs.validate().unwrap_err().to_string();
            assert!(
                err.contains("redis.counted") && err.contains("commandstats"),
                "{err}"
            );
        }
    }
}
