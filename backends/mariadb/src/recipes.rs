//! The MariaDB system's lock recipes, as `lockbench-registry` finds them (through
//! `System::recipes`): each one's name, servers, lock life and constructor.
//!
//! A recipe's `expiry` is how long a dead client's lock lives: for a silent (partitioned or
//! paused) holder the session's `wait_timeout` ([`MariadbKnobs::expiry`]). A killed holder's
//! lock is freed at once (its socket closes).

use crate::{MariaBackend, MariaRecipe, MariadbKnobs};
use lockbench_core::recipe::Build;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Group, Recipe, Scenario};
use std::time::Duration;

/// mariadb-get-lock: `GET_LOCK` waiting in the server, released by `RELEASE_LOCK`.
pub const MARIADB_GET_LOCK: BackendKind = BackendKind::of("mariadb-get-lock");
/// mariadb-try-lock: polling `GET_LOCK(name, 0)`.
pub const MARIADB_TRY_LOCK: BackendKind = BackendKind::of("mariadb-try-lock");

/// The servers the recipes run on: the `mariadb` endpoints list (primary and replica; a
/// client uses the one that is not read-only).
const GROUP: Group = Group::listed(crate::MARIADB);

fn knobs(scenario: &Scenario) -> Result<MariadbKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

/// A silent holder's lock lives until the server ends its session.
fn wait_timeout(scenario: &Scenario) -> Duration {
    knobs(scenario)
        .expect("knobs are checked when a scenario is loaded")
        .expiry()
}

fn build(recipe: MariaRecipe, s: &Scenario, e: &Endpoints) -> Result<AnyBackend, BackendError> {
    Ok(AnyBackend::new(MariaBackend::new(
        recipe,
        e,
        &knobs(s)?,
        s.seed,
    )?))
}

const fn recipe(kind: BackendKind, build: &'static Build) -> Recipe {
    Recipe {
        kind,
        group: GROUP,
        expiry: &wait_timeout,
        broken: false,
        build,
    }
}

/// The recipes, in the order comparisons list them (what the system's `System::recipes`
/// returns).
pub static RECIPES: &[Recipe] = &[
    recipe(MARIADB_GET_LOCK, &|s, e| build(MariaRecipe::GetLock, s, e)),
    recipe(MARIADB_TRY_LOCK, &|s, e| build(MariaRecipe::TryLock, s, e)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_is_its_recipes_kind() {
        let kinds: Vec<_> = RECIPES.iter().map(|r| r.kind).collect();
        let recipes: Vec<_> = MariaRecipe::ALL.iter().map(|r| r.kind()).collect();
        assert_eq!(kinds, recipes);
        assert!(
            RECIPES
                .iter()
                .all(|r| !r.broken && r.group.name() == "mariadb")
        );
    }

    #[test]
    fn expiry_is_the_wait_timeout() {
        let text = "name = \"t\"\nseed = 1\nbackends = [\"mariadb-get-lock\"]\nduration = \"1s\"\n\
                    [workload]\nclients = 1\nkeys = 1\n[mariadb]\nwait_timeout = \"3s\"\n";
        let s = Scenario::load("test", text, &[]).unwrap();
        assert_eq!((RECIPES[0].expiry)(&s), Duration::from_secs(3));
    }
}
