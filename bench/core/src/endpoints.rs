//! Where each system's servers listen.
//!
//! The managed cluster writes one of these when it starts (`lockbench status --json` prints it);
//! `--cluster external:FILE` reads the same shape from a TOML file, so a run against a real
//! cluster is the same run with different addresses.
//!
//! Keyed by endpoint group, not one named field per system (issue 20, the System boundary):
//! each system names its own groups (`zookeeper`, `etcd`, `redis`, `redlock`, `sentinel`) and
//! reads its own list with [`Endpoints::get`], and lockbench iterates over the lists instead of
//! naming them. The file format is unchanged (`zookeeper = ["10.78.0.11:2181", ...]`, in the
//! order the cluster writes them). Core does not know the group names, so it cannot reject a
//! misspelled one: the registry does (`lockbench_registry::check_endpoints`), where every
//! external file is read.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Server addresses, one list per endpoint group, in the order they were written. A missing
/// or empty list means "this cluster has none"; a run that needs it fails up front, naming it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Endpoints(IndexMap<String, Vec<String>>);

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

    /// The addresses of `group` (empty when the cluster has none).
    pub fn get(&self, group: &str) -> &[String] {
        self.0.get(group).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The addresses of `group`, for editing (a test pointing one at a dead port); `None` when
    /// the cluster has none.
    pub fn get_mut(&mut self, group: &str) -> Option<&mut Vec<String>> {
        self.0.get_mut(group)
    }

    /// Sets the addresses of `group` (a new group goes last).
    pub fn set(&mut self, group: &str, addresses: Vec<String>) {
        self.0.insert(group.to_string(), addresses);
    }

    /// Every group and its addresses, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(g, a)| (g.as_str(), a.as_slice()))
    }

    /// Every list, for rewriting addresses in place (the link proxies).
    pub fn lists_mut(&mut self) -> impl Iterator<Item = &mut Vec<String>> {
        self.0.values_mut()
    }
}

impl<S: Into<String>> FromIterator<(S, Vec<String>)> for Endpoints {
    fn from_iter<I: IntoIterator<Item = (S, Vec<String>)>>(iter: I) -> Self {
        Endpoints(iter.into_iter().map(|(g, a)| (g.into(), a)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_their_file_order_and_a_missing_one_is_empty() {
        let text = "zookeeper = [\"b:2\", \"c:3\"]\nredis = [\"a:1\"]\n";
        let e = Endpoints::from_toml(text).unwrap();
        assert_eq!(e.to_toml(), text);
        assert_eq!(e.get("zookeeper"), ["b:2", "c:3"]);
        assert!(e.get("etcd").is_empty());
        let groups: Vec<&str> = e.iter().map(|(g, _)| g).collect();
        assert_eq!(groups, ["zookeeper", "redis"]);
    }
}
