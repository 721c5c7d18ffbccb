//! Where each system's servers listen.
//!
//! The managed cluster writes one of these when it starts (`lockbench status --json` prints it);
//! `--cluster external:FILE` reads the same shape from a TOML file, so a run against a real
//! cluster is the same run with different addresses.
//!
//! Keyed by endpoint group, not one named field per system (the System boundary):
//! each system names its own groups (`zookeeper`, `etcd`, `redis`, `redlock`, `sentinel`) and
//! reads its own list with [`Endpoints::get`], and lockbench iterates over the lists instead of
//! naming them. The file format is unchanged (`zookeeper = ["10.78.0.11:2181", ...]`, in the
//! order the cluster writes them). Core does not know the group names, so it cannot reject a
//! misspelled one: the registry does (`lockbench_registry::check_endpoints`), where every
//! external file is read.

use crate::connection::{Connection, ConnectionSummary};
use indexmap::IndexMap;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::Path;

/// Server addresses, one list per endpoint group, in the order they were written, with how
/// clients connect to each group ([`Connection`]). A missing or empty list means "this cluster
/// has none"; a run that needs it fails up front, naming it.
///
/// A group is written as a bare list (`redis = ["10.0.0.5:6379"]`, the original form, and how a
/// group with no settings is still written) or as a table with the
/// list under `endpoints` and its settings beside it:
///
/// ```toml
/// [redis]
/// endpoints = ["redis.internal:6380"]
/// user = "lockbench"
/// password_env = "LOCKBENCH_REDIS_PASSWORD"
/// tls = { ca = "certs/ca.pem", cert = "certs/client.pem", key = "certs/client.key" }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Endpoints(IndexMap<String, Entry>);

/// One group's addresses and connection settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Entry {
    addresses: Vec<String>,
    connection: Connection,
}

/// The table form of a group (`[redis]` with `endpoints = [...]`).
#[derive(Serialize, Deserialize)]
struct Table {
    endpoints: Vec<String>,
    #[serde(flatten)]
    connection: Connection,
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.connection.is_plain() {
            return self.addresses.serialize(s);
        }
        Table {
            endpoints: self.addresses.clone(),
            connection: self.connection.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entry, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Entry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of addresses, or a table with `endpoints` and settings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Entry, A::Error> {
                let addresses = Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Entry {
                    addresses,
                    connection: Connection::default(),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Entry, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Entry {
                    addresses: t.endpoints,
                    connection: t.connection,
                })
            }
        }
        d.deserialize_any(Either)
    }
}

/// The name the Sentinels monitor the failover primary under.
pub const SENTINEL_MASTER_NAME: &str = "lockbench";

impl Endpoints {
    /// Parses an external cluster file; errors name the file's bad field.
    pub fn from_toml(text: &str) -> Result<Endpoints, String> {
        let e: Endpoints = toml::from_str(text).map_err(|e| e.to_string())?;
        for (group, entry) in &e.0 {
            entry.connection.check(group)?;
        }
        Ok(e)
    }

    /// The endpoints as a TOML document (the format `external:FILE` reads).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("endpoints serialize")
    }

    /// The addresses of `group` (empty when the cluster has none).
    pub fn get(&self, group: &str) -> &[String] {
        self.0
            .get(group)
            .map(|e| e.addresses.as_slice())
            .unwrap_or(&[])
    }

    /// How clients connect to `group` (plain when the cluster file sets nothing).
    pub fn connection(&self, group: &str) -> &Connection {
        static PLAIN: std::sync::OnceLock<Connection> = std::sync::OnceLock::new();
        match self.0.get(group) {
            Some(e) => &e.connection,
            None => PLAIN.get_or_init(Connection::default),
        }
    }

    /// Sets how clients connect to `group` (a new group goes last, with no addresses).
    pub fn set_connection(&mut self, group: &str, connection: Connection) {
        self.0.entry(group.to_string()).or_default().connection = connection;
    }

    /// The addresses of `group`, for editing (a test pointing one at a dead port); `None` when
    /// the cluster has none.
    pub fn get_mut(&mut self, group: &str) -> Option<&mut Vec<String>> {
        self.0.get_mut(group).map(|e| &mut e.addresses)
    }

    /// Sets the addresses of `group` (a new group goes last); its settings stay.
    pub fn set(&mut self, group: &str, addresses: Vec<String>) {
        self.0.entry(group.to_string()).or_default().addresses = addresses;
    }

    /// Every group and its addresses, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0
            .iter()
            .map(|(g, e)| (g.as_str(), e.addresses.as_slice()))
    }

    /// Every group and its connection settings, in file order.
    pub fn connections(&self) -> impl Iterator<Item = (&str, &Connection)> {
        self.0.iter().map(|(g, e)| (g.as_str(), &e.connection))
    }

    /// What `results.json` records of every group's connection (TLS, mutual TLS, auth, server
    /// name: nothing secret), for the groups with addresses.
    pub fn summaries(&self) -> std::collections::BTreeMap<String, ConnectionSummary> {
        self.0
            .iter()
            .filter(|(_, e)| !e.addresses.is_empty())
            .map(|(g, e)| (g.clone(), e.connection.summary()))
            .collect()
    }

    /// Makes every setting's relative path relative to `dir` (the cluster file's directory).
    pub fn resolve_paths(&mut self, dir: &Path) {
        for e in self.0.values_mut() {
            e.connection.resolve_paths(dir);
        }
    }

    /// Every list, for rewriting addresses in place (the link proxies).
    pub fn lists_mut(&mut self) -> impl Iterator<Item = &mut Vec<String>> {
        self.0.values_mut().map(|e| &mut e.addresses)
    }
}

impl<S: Into<String>> FromIterator<(S, Vec<String>)> for Endpoints {
    fn from_iter<I: IntoIterator<Item = (S, Vec<String>)>>(iter: I) -> Self {
        Endpoints(
            iter.into_iter()
                .map(|(g, addresses)| {
                    (
                        g.into(),
                        Entry {
                            addresses,
                            connection: Connection::default(),
                        },
                    )
                })
                .collect(),
        )
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

    /// A group written as a table carries its settings; written back (TOML, and JSON as the
    /// worker processes' job line carries it) it reads the same, bare lists stay bare.
    #[test]
    fn a_table_group_keeps_its_settings_and_a_bare_list_stays_bare() {
        let text = r#"
zookeeper = ["z:2181"]

[redis]
endpoints = ["r:6380"]
user = "lockbench"
password_env = "LB_PW"
chroot = "/x"
tls = { ca = "certs/ca.pem", server_name = "redis.internal" }
"#;
        let mut e = Endpoints::from_toml(text).unwrap();
        assert_eq!(e.get("redis"), ["r:6380"]);
        let c = e.connection("redis");
        assert_eq!(c.user.as_deref(), Some("lockbench"));
        assert_eq!(c.system.get("chroot").map(String::as_str), Some("/x"));
        assert!(e.connection("zookeeper").is_plain());
        assert!(e.connection("etcd").is_plain());
        let written = e.to_toml();
        assert!(
            written.starts_with("zookeeper = [\"z:2181\"]\n"),
            "{written}"
        );
        assert_eq!(Endpoints::from_toml(&written).unwrap(), e);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Endpoints>(&json).unwrap(), e);
        e.resolve_paths(Path::new("/etc/lb"));
        let tls = e.connection("redis").tls.clone().unwrap();
        assert_eq!(tls.ca.unwrap(), Path::new("/etc/lb/certs/ca.pem"));
        let s = e.summaries();
        assert!(s["redis"].tls && s["redis"].auth && !s["redis"].mutual_tls);
        assert!(!s["zookeeper"].tls);
    }

    /// A misspelled setting, a secret written in the file, and a table without addresses are
    /// errors naming the field.
    #[test]
    fn bad_tables_are_named() {
        let err =
            Endpoints::from_toml("[redis]\nendpoints = [\"a:1\"]\ntls = { cafile = \"x\" }\n")
                .unwrap_err();
        assert!(err.contains("cafile"), "{err}");
        let err = Endpoints::from_toml("[redis]\naddresses = [\"a:1\"]\n").unwrap_err();
        assert!(err.contains("endpoints"), "{err}");
        let err =
            Endpoints::from_toml("[etcd]\nendpoints = [\"a:1\"]\nuser = \"u\"\n").unwrap_err();
        assert!(err.contains("password_env"), "{err}");
    }
}
