//! The election recipes of every registered system, and building one by name.

use crate::SYSTEMS;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyElector, ElectionKind, ElectionRecipe, Endpoints, Scenario};

/// Every registered election recipe, system by system in [`SYSTEMS`] order, each system's in
/// its own order.
pub fn elections() -> impl Iterator<Item = &'static ElectionRecipe> {
    SYSTEMS.iter().flat_map(|s| s.elections().iter())
}

/// The election recipe called `kind`, when a registered system has it.
pub fn election(kind: ElectionKind) -> Option<&'static ElectionRecipe> {
    elections().find(|r| r.kind == kind)
}

/// The registered election recipe `kind`; a kind reaches here only after scenario loading
/// ([`crate::load_scenario`]) accepted it, so a miss is a bug.
pub(crate) fn registered_election(kind: ElectionKind) -> &'static ElectionRecipe {
    election(kind).unwrap_or_else(|| panic!("{kind} is not a registered election recipe"))
}

/// Every registered election recipe's name, in [`elections`] order.
pub fn election_names() -> Vec<&'static str> {
    elections().map(|r| r.kind.name()).collect()
}

/// The election recipe typed as `name`; the error lists the registered ones.
pub fn parse_election(name: &str) -> Result<ElectionKind, String> {
    election(ElectionKind::named(name))
        .map(|r| r.kind)
        .ok_or_else(|| {
            format!(
                "unknown election recipe `{name}`; expected one of: {}",
                election_names().join(", ")
            )
        })
}

/// Builds `kind`'s elector from `scenario`'s knobs and `endpoints`, for the election called
/// `name`: the one constructor the failover coordinator and the candidate worker processes
/// share.
pub fn elector(
    kind: ElectionKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
    name: &str,
) -> Result<AnyElector, BackendError> {
    match election(kind) {
        Some(r) => (r.build)(scenario, endpoints, name),
        None => Err(BackendError::Config(
            parse_election(kind.name()).unwrap_err(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registered election recipes, by the names scenarios and results have always
    /// used; a misspelled one is named with them.
    #[test]
    fn election_recipes_are_found_by_name() {
        assert_eq!(
            election_names(),
            [
                "zk-election",
                "etcd-election",
                "etcd-lease-election",
                "redis-lease-election"
            ]
        );
        for name in election_names() {
            assert_eq!(parse_election(name).unwrap().name(), name);
        }
        let err = parse_election("zk-fair").unwrap_err();
        assert!(
            err.contains("`zk-fair`") && err.contains("zk-election, etcd-election"),
            "{err}"
        );
    }
}
