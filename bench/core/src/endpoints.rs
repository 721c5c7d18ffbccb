//! Where each backend's servers listen.
//!
//! The managed cluster writes one of these when it starts (`lockbench status --json` prints it);
//! `--cluster external:FILE` reads the same shape from a TOML file, so a run against a real
//! cluster is the same run with different addresses.

use serde::{Deserialize, Serialize};

/// Server addresses for every backend. A list left empty means "this cluster has none"; a run
/// that needs it fails up front, naming the missing field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    /// ZooKeeper ensemble members, `host:port`.
    #[serde(default)]
    pub zookeeper: Vec<String>,
    /// etcd members' client URLs, `http://host:port`.
    #[serde(default)]
    pub etcd: Vec<String>,
    /// The standalone Redis server used by `redis-setnx`, `host:port`.
    #[serde(default)]
    pub redis: Vec<String>,
    /// The independent Redis servers used by Redlock (normally five), `host:port`.
    #[serde(default)]
    pub redlock: Vec<String>,
    /// The Redis Sentinels watching the failover primary + replica (named
    /// [`SENTINEL_MASTER_NAME`]), `host:port`; `redis-sentinel` asks them for the primary.
    #[serde(default)]
    pub sentinel: Vec<String>,
}

/// The name the Sentinels monitor the failover primary under.
pub const SENTINEL_MASTER_NAME: &str = "lockbench";

impl Endpoints {
    /// Parses an external cluster file; errors name the file's bad field.
    pub fn from_toml(text: &str) -> Result<Endpoints, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The endpoints as a TOML document (the format `external:FILE` reads).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("endpoints serialize")
    }
}
