//! Identifiers. All are small and `Copy` so that recording an op is a copy, not an allocation.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A client process (Jepsen's *process*): one logical thread of lock calls with its own
/// session, lease or connections. A client that saw an indeterminate outcome is retired and
/// replaced by a client with a fresh id, so an id never spans two sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub u32);

/// A lock key, as an index into the scenario's key table (`0..workload.keys`). Backends turn it
/// into a path or key name once, when a client connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeyId(pub u32);

/// A fencing token: a number the lock service hands out with each grant and that only grows,
/// so a protected resource can reject a write carrying a token lower than one it has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FencingToken(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "k{}", self.0)
    }
}

/// Keeps `name` for the life of the process, once per distinct name, so a recipe's name read
/// from text is a `&'static str` like the one its constant was made from.
fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(leaked);
    leaked
}

/// A recipe's name as a `Copy` type that compares by name: its `of` const fn for a
/// recipe's own constant, `named` (interned) for text, and the bare name as its Display,
/// Debug and serialized form. `$what` names it (with its article) in the error for an empty name.
macro_rules! recipe_name {
    ($(#[$doc:meta])* $name:ident, $example:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(&'static str);

        impl $name {
            #[doc = concat!("The kind called `name`, for a recipe's own constant (`pub const X: ",
                stringify!($name), " = ", stringify!($name), "::of(\"", $example, "\")`).")]
            pub const fn of(name: &'static str) -> $name {
                $name(name)
            }

            /// The kind called `name`, from text (a scenario, a results file, the command
            /// line). The name is interned: each distinct name is kept once for the life of
            /// the process.
            pub fn named(name: &str) -> $name {
                $name(intern(name))
            }

            /// The name users type and results print.
            pub fn name(self) -> &'static str {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:?}", self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
                if name.is_empty() {
                    return Err(serde::de::Error::custom(concat!($what, " name cannot be empty")));
                }
                Ok($name::named(&name))
            }
        }
    };
}

recipe_name!(
    /// A lock recipe, by the name users type and results print (`zk-fair`, `redlock`,
    /// `pg-advisory`).
    ///
    /// Why a name and not an enum: the set of recipes is open. Each system's crate registers its
    /// recipes ([`Recipe`](crate::recipe::Recipe), through
    /// [`System::recipes`](crate::System::recipes)), and `lockbench-registry` checks a scenario's
    /// names against them; core knows no recipe. A saved `results.json` naming a recipe this
    /// build does not have still loads (reanalysis and `compare` read it).
    ///
    /// It stays `Copy` and compares by name: names read from files are interned once
    /// ([`BackendKind::named`]), so a kind is a `&'static str` however it was made.
    BackendKind,
    "zk-fair",
    "a backend"
);

recipe_name!(
    /// A leader-election recipe, by the name users type and results print (`zk-election`,
    /// `redis-lease-election`).
    ///
    /// Open for the same reason as [`BackendKind`]: each system's crate registers its election
    /// recipes ([`ElectionRecipe`](crate::recipe::ElectionRecipe), through
    /// [`System::elections`](crate::System::elections)), `lockbench-registry` checks a
    /// scenario's `elections` against them, and core knows none.
    ElectionKind,
    "zk-election",
    "an election recipe"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// A name read from text is the same kind as the recipe's constant, and serializes back
    /// to the name users type.
    #[test]
    fn a_kind_is_its_name() {
        const FAIR: BackendKind = BackendKind::of("zk-fair");
        let read: BackendKind = serde_json::from_str("\"zk-fair\"").unwrap();
        assert_eq!(read, FAIR);
        assert!(std::ptr::eq(
            BackendKind::named("x-y").name(),
            BackendKind::named("x-y").name()
        ));
        assert_eq!(serde_json::to_string(&FAIR).unwrap(), "\"zk-fair\"");
        assert_eq!(FAIR.to_string(), "zk-fair");
        assert!(serde_json::from_str::<BackendKind>("\"\"").is_err());
    }

    /// An election recipe's name reads and prints the same way, and is no lock recipe.
    #[test]
    fn an_election_kind_is_its_name() {
        const ZK: ElectionKind = ElectionKind::of("zk-election");
        let read: ElectionKind = serde_json::from_str("\"zk-election\"").unwrap();
        assert_eq!(read, ZK);
        assert_eq!(serde_json::to_string(&ZK).unwrap(), "\"zk-election\"");
        assert_eq!(format!("{ZK} {ZK:?}"), "zk-election \"zk-election\"");
        let err = serde_json::from_str::<ElectionKind>("\"\"").unwrap_err();
        assert!(err.to_string().contains("an election recipe name"), "{err}");
    }
}
