//! Finding kinds: the one list of what a safety checker can report.
//!
//! Every name a checker gives its findings, the scorecard counts, `results.json` writes, an
//! expectation may name (`violated = { all = ["mutex"] }`) and the report prints comes from the
//! table below, so a kind is spelled in exactly one place. A checker's finding kind is
//! [`FindingKind`], not a string: a checker cannot report a kind the table does not have (it would
//! not compile), and an expectation naming one is rejected with the list of known kinds.
//!
//! Two kinds are not violations: a stale write, or a write after the lock was lost, that the
//! resource *rejected* is fencing doing its job. They are findings (the scorecard shows them
//! apart, as `fenced`) but never make a verdict invalid and cannot be expected as a violation.
//!
//! # Adding a kind
//!
//! Add one line to the table in this file (variant, name, whether it is a violation, and how a
//! count of it reads), report it from the checker as
//! `Finding { kind: FindingKind::TheVariant, .. }`, and name it in the `violated` lists of the
//! built-in scenarios that may show it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $violation:literal, $one:literal, $many:literal;)*) => {
        /// What a checker found: a violation (`mutex`, `token_reuse`, ...) or a write fencing
        /// stopped (`stale_write_rejected`, `write_after_lock_lost_rejected`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FindingKind {
            $($(#[$doc])* $variant,)*
        }

        impl FindingKind {
            /// Every kind, in the table's order (violations most severe first, then the
            /// writes fencing stopped).
            pub const ALL: &'static [FindingKind] = &[$(FindingKind::$variant,)*];

            /// The name `results.json`, the scorecard and `[expect]` use.
            pub fn name(self) -> &'static str {
                match self {
                    $(FindingKind::$variant => $name,)*
                }
            }

            /// `false` for a write fencing stopped: no violation, the token did its job.
            pub fn is_violation(self) -> bool {
                match self {
                    $(FindingKind::$variant => $violation,)*
                }
            }

            /// How `n` of this kind read: `"1 overlap"`, `"2 overlaps"`.
            pub fn counted(self, n: u64) -> String {
                let word = match self {
                    $(FindingKind::$variant => if n == 1 { $one } else { $many },)*
                };
                format!("{n} {word}")
            }
        }
    };
}

kinds! {
    /// Two clients held the same key at once (writer/writer for a shared lock).
    Mutex => "mutex", true, "overlap", "overlaps";
    /// A shared grant next to an exclusive holder, or an exclusive grant next to a shared one.
    RwConflict => "rw_conflict", true, "reader/writer conflict", "reader/writer conflicts";
    /// The resource accepted a write carrying a token lower than one it had seen.
    StaleWriteAccepted => "stale_write_accepted", true, "stale write accepted",
        "stale writes accepted";
    /// The resource accepted a write from a client whose lock had gone to another client.
    WriteAfterLockLostAccepted => "write_after_lock_lost_accepted", true,
        "write accepted after the lock was lost", "writes accepted after the lock was lost";
    /// A grant's fencing token was not above every earlier token of its key.
    TokenReuse => "token_reuse", true, "reused token", "reused tokens";
    /// A release reported success after the lock had gone to another client.
    ForeignRelease => "foreign_release", true, "release of another client's lock",
        "releases of another client's lock";
    /// A renew reported success after the lock had gone to another client.
    ForeignRenew => "foreign_renew", true, "renewal of another client's lock",
        "renewals of another client's lock";
    /// The resource rejected a stale write: fencing worked.
    StaleWriteRejected => "stale_write_rejected", false, "stale write rejected",
        "stale writes rejected";
    /// The resource rejected a write from a client whose lock was gone: fencing worked.
    WriteAfterLockLostRejected => "write_after_lock_lost_rejected", false,
        "write rejected after the lock was lost", "writes rejected after the lock was lost";
}

impl FindingKind {
    /// The kind called `name`, or an error listing the violation kinds.
    pub fn parse(name: &str) -> Result<FindingKind, String> {
        FindingKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown finding kind `{name}`; the violation kinds are {}",
                    FindingKind::violations()
                        .map(FindingKind::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// The kinds that are violations, in the table's order.
    pub fn violations() -> impl Iterator<Item = FindingKind> {
        FindingKind::ALL
            .iter()
            .copied()
            .filter(|k| k.is_violation())
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FindingKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FindingKind::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_name_that_parses_back() {
        let mut names: Vec<&str> = FindingKind::ALL.iter().map(|k| k.name()).collect();
        for k in FindingKind::ALL {
            assert_eq!(FindingKind::parse(k.name()), Ok(*k));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FindingKind::ALL.len(), "a name is used twice");
        let err = FindingKind::parse("overlap").unwrap_err();
        assert!(
            err.contains("mutex") && err.contains("foreign_release"),
            "{err}"
        );
        assert!(!err.contains("stale_write_rejected"), "{err}");
        assert_eq!(FindingKind::Mutex.counted(1), "1 overlap");
        assert_eq!(
            FindingKind::ForeignRelease.counted(2),
            "2 releases of another client's lock"
        );
        assert!(!FindingKind::StaleWriteRejected.is_violation());
    }
}
