//! etcd's knobs (`[etcd]` in a scenario): defaults and validation live here, with the recipes
//! that read them (a system's settings belong to its crate, not to core).

use lockbench_core::knobs::{KnobSchema, KnobTable, Knobs, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// etcd recipe knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EtcdKnobs {
    /// Lease TTL (whole seconds; etcd rounds up to its minimum of about 2 s).
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// Key prefix for locks.
    pub prefix: String,
}

/// The recipes' default key prefix (the secure cluster's role covers the keys under it).
pub(crate) const DEFAULT_PREFIX: &str = "/lockbench";

impl Default for EtcdKnobs {
    fn default() -> Self {
        EtcdKnobs {
            lease_ttl: Duration::from_secs(5),
            prefix: DEFAULT_PREFIX.into(),
        }
    }
}

impl KnobTable for EtcdKnobs {
    const NAME: &'static str = "etcd";

    fn validate(&self) -> Result<(), ScenarioError> {
        if self.lease_ttl < Duration::from_secs(1) {
            return Err(ScenarioError::new(
                "etcd.lease_ttl",
                "must be at least 1s (etcd leases are whole seconds)",
            ));
        }
        Ok(())
    }
}

/// etcd's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<EtcdKnobs>()];

/// Moves the run's etcd keys under `id` (an etcd key outlives an acquire cut short until its
/// lease expires, so a run must not meet another run's).
pub fn separate_keys(knobs: &mut Knobs, id: &str) -> Result<(), String> {
    knobs.update(|k: &mut EtcdKnobs| k.prefix = format!("{}/{id}", k.prefix))
}
