//! Knobs: each system's settings, one TOML table per system (`[zookeeper]`, `[redlock]`),
//! owned by the system's crate.
//!
//! Core used to hold one struct per system and one [`crate::Scenario`] field each, so a new
//! system had to edit core in four places, two of them (validation, defaults) invisible to the
//! compiler. Now a system declares its tables as [`KnobTable`]s (type, name, defaults,
//! validation) and lists them as [`KnobSchema`]s; the registry fills a loaded scenario from
//! every registered schema (`lockbench_registry::load_scenario`), and a recipe reads its table
//! with [`Knobs::get`]. The scenario file is unchanged: the tables stay top-level tables, in
//! the registry's order, with every default written out.
//!
//! Core cannot know which tables exist, so [`crate::Scenario::load`] alone keeps the tables as
//! given (tests of workload logic use it); every runtime path loads through the registry,
//! which rejects a table no system declares.

use crate::scenario::ScenarioError;
use indexmap::IndexMap;
use serde::de::{DeserializeOwned, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One system's knob table: a serde type with defaults for every field (`#[serde(default)]`)
/// that rejects unknown fields, named by its TOML table.
pub trait KnobTable: Serialize + DeserializeOwned + Default + 'static {
    /// The table's name in a scenario (`zookeeper`), and its field path prefix in errors.
    const NAME: &'static str;

    /// Checks values that parse but cannot work; errors name the field (`zookeeper.root`).
    fn validate(&self) -> Result<(), ScenarioError> {
        Ok(())
    }
}

/// A [`KnobTable`] as data, so the registry can list every system's tables.
#[derive(Clone, Copy)]
pub struct KnobSchema {
    /// The table's name.
    pub name: &'static str,
    /// Parses the table as given (`None`: absent), fills its defaults, validates it, and
    /// writes it back with every field.
    pub fill: fn(Option<&toml::Table>) -> Result<toml::Table, ScenarioError>,
}

impl fmt::Debug for KnobSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnobSchema")
            .field("name", &self.name)
            .finish()
    }
}

/// A 32-bit FNV-1a of `bytes`: how a system's `separate_keys` derives a run's own lock
/// names or namespace from the run's id (stable across builds and machines, unlike std's
/// hasher).
pub fn run_hash(bytes: impl IntoIterator<Item = u8>) -> u32 {
    bytes.into_iter().fold(0x811c_9dc5, |h: u32, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The schema of `K`.
pub const fn schema<K: KnobTable>() -> KnobSchema {
    KnobSchema {
        name: K::NAME,
        fill: fill::<K>,
    }
}

fn fill<K: KnobTable>(given: Option<&toml::Table>) -> Result<toml::Table, ScenarioError> {
    let knobs = parse::<K>(given).map_err(|e| ScenarioError::new(K::NAME, e))?;
    knobs.validate()?;
    toml::Table::try_from(&knobs).map_err(|e| ScenarioError::new(K::NAME, e.to_string()))
}

fn parse<K: KnobTable>(given: Option<&toml::Table>) -> Result<K, String> {
    match given {
        Some(t) => toml::Value::Table(t.clone())
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string().trim_end().to_string()),
        None => Ok(K::default()),
    }
}

/// Every system's knob tables of a scenario, by name, in file (after loading: registry) order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Knobs(IndexMap<String, toml::Table>);

impl Knobs {
    /// The table `K` (its defaults when the scenario has none).
    pub fn get<K: KnobTable>(&self) -> Result<K, String> {
        parse::<K>(self.0.get(K::NAME)).map_err(|e| format!("scenario field `{}`: {e}", K::NAME))
    }

    /// Edits the table `K` (a run giving its keys a prefix of their own).
    pub fn update<K: KnobTable>(&mut self, edit: impl FnOnce(&mut K)) -> Result<(), String> {
        let mut knobs = self.get::<K>()?;
        edit(&mut knobs);
        let table = toml::Table::try_from(&knobs).map_err(|e| e.to_string())?;
        self.0.insert(K::NAME.to_string(), table);
        Ok(())
    }

    /// Fills every table of `schemas` (defaults, validation), in `schemas`' order; a table no
    /// schema names is an error naming it.
    pub fn fill(&mut self, schemas: &[KnobSchema]) -> Result<(), ScenarioError> {
        if let Some(unknown) = self
            .0
            .keys()
            .find(|k| !schemas.iter().any(|s| s.name == *k))
        {
            let known: Vec<String> = schemas.iter().map(|s| format!("`{}`", s.name)).collect();
            return Err(ScenarioError::new(
                unknown,
                format!(
                    "unknown field `{unknown}`: not a table lockbench knows; the knob tables are {}",
                    known.join(", ")
                ),
            ));
        }
        let mut filled = IndexMap::new();
        for s in schemas {
            filled.insert(s.name.to_string(), (s.fill)(self.0.get(s.name))?);
        }
        self.0 = filled;
        Ok(())
    }

    /// The tables' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

impl Serialize for Knobs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Takes every top-level key of a scenario that is not one of its own fields: a table is a
/// system's knobs; anything else is a misspelled field.
impl<'de> Deserialize<'de> for Knobs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Tables;
        impl<'de> Visitor<'de> for Tables {
            type Value = Knobs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("knob tables")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Knobs, A::Error> {
                let mut out = IndexMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    match map.next_value::<toml::Value>()? {
                        toml::Value::Table(t) => {
                            out.insert(key, t);
                        }
                        _ => return Err(A::Error::custom(format!("unknown field `{key}`"))),
                    }
                }
                Ok(Knobs(out))
            }
        }
        deserializer.deserialize_map(Tables)
    }
}

#[cfg(test)]
mod tests {
    /// FNV-1a's published values: a run's keys stay what they were across builds.
    #[test]
    fn run_hash_is_fnv_1a() {
        assert_eq!(super::run_hash([]), 0x811c_9dc5);
        assert_eq!(super::run_hash(*b"a"), 0xe40c_292c);
        assert_eq!(super::run_hash(*b"foobar"), 0xbf9c_f968);
    }
}
