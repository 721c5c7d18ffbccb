//! ZooKeeper's knobs (`[zookeeper]` in a scenario): defaults and validation live here, with the
//! recipes that read them (a system's settings belong to its crate, not to core).

use lockbench_core::knobs::{KnobSchema, KnobTable, schema};
use lockbench_core::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// ZooKeeper recipe knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZookeeperKnobs {
    /// Session timeout requested by each client; its locks vanish this long after it dies.
    #[serde(with = "humantime_serde")]
    pub session_timeout: Duration,
    /// Parent node under which lock nodes are created.
    pub root: String,
}

impl Default for ZookeeperKnobs {
    fn default() -> Self {
        ZookeeperKnobs {
            session_timeout: Duration::from_secs(4),
            root: "/lockbench".into(),
        }
    }
}

impl KnobTable for ZookeeperKnobs {
    const NAME: &'static str = "zookeeper";

    fn validate(&self) -> Result<(), ScenarioError> {
        if self.session_timeout < Duration::from_millis(500) {
            return Err(ScenarioError::new(
                "zookeeper.session_timeout",
                "must be at least 500ms",
            ));
        }
        let root = &self.root;
        if !root.starts_with('/') || root.len() < 2 || root.ends_with('/') {
            return Err(ScenarioError::new(
                "zookeeper.root",
                "must be an absolute path like \"/lockbench\"",
            ));
        }
        Ok(())
    }
}

/// ZooKeeper's knob tables, for the registry.
pub const KNOBS: &[KnobSchema] = &[schema::<ZookeeperKnobs>()];
