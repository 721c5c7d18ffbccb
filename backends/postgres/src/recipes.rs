//! The PostgreSQL system's lock recipes, as `lockbench-registry` finds them (through
//! `System::recipes`): each one's name, servers, lock life and constructor.
//!
//! A recipe's `expiry` is how long a dead client's lock lives: for a *partitioned* holder the
//! session's keepalive bound ([`PostgresKnobs::expiry`]). A killed holder's lock is freed at
//! once (its socket closes); a *paused* holder's is never freed while the pause lasts (its
//! kernel answers the keepalives), so a pause is safe but blocks every waiter.

use crate::{PgBackend, PgRecipe, PostgresKnobs};
use lockbench_core::recipe::Build;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Group, Recipe, Scenario};
use std::time::Duration;

/// pg-advisory: session-level `pg_advisory_lock` under `lock_timeout`, released by
/// `pg_advisory_unlock`.
pub const PG_ADVISORY: BackendKind = BackendKind::of("pg-advisory");
/// pg-try-advisory: polling `pg_try_advisory_lock`, as job queues do.
pub const PG_TRY_ADVISORY: BackendKind = BackendKind::of("pg-try-advisory");
/// pg-advisory-xact: `pg_advisory_xact_lock` held by an open transaction, released by
/// `COMMIT`.
pub const PG_ADVISORY_XACT: BackendKind = BackendKind::of("pg-advisory-xact");

/// The servers the recipes run on: the `postgres` endpoints list (primary and replica; a
/// client uses whichever accepts writes).
const GROUP: Group = Group::listed(crate::POSTGRES);

fn knobs(scenario: &Scenario) -> Result<PostgresKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

/// A partitioned holder's lock lives until the server's keepalive probes give up.
fn keepalive_bound(scenario: &Scenario) -> Duration {
    knobs(scenario)
        .expect("knobs are checked when a scenario is loaded")
        .expiry()
}

fn build(recipe: PgRecipe, s: &Scenario, e: &Endpoints) -> Result<AnyBackend, BackendError> {
    Ok(AnyBackend::new(PgBackend::new(
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
        expiry: &keepalive_bound,
        broken: false,
        build,
    }
}

/// The recipes, in the order comparisons list them (what the system's `System::recipes`
/// returns).
pub static RECIPES: &[Recipe] = &[
    recipe(PG_ADVISORY, &|s, e| build(PgRecipe::Advisory, s, e)),
    recipe(PG_TRY_ADVISORY, &|s, e| build(PgRecipe::TryAdvisory, s, e)),
    recipe(PG_ADVISORY_XACT, &|s, e| build(PgRecipe::Xact, s, e)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_is_its_recipes_kind() {
        let kinds: Vec<_> = RECIPES.iter().map(|r| r.kind).collect();
        let recipes: Vec<_> = PgRecipe::ALL.iter().map(|r| r.kind()).collect();
        assert_eq!(kinds, recipes);
        assert!(
            RECIPES
                .iter()
                .all(|r| !r.broken && r.group.name() == "postgres")
        );
    }

    #[test]
    fn expiry_is_the_keepalive_bound() {
        let text = "name = \"t\"\nseed = 1\nbackends = [\"pg-advisory\"]\nduration = \"1s\"\n[workload]\nclients = 1\nkeys = 1\n\
                    [postgres]\ntcp_keepalives_idle = \"2s\"\n";
        let s = Scenario::load("test", text, &[]).unwrap();
        assert_eq!((RECIPES[0].expiry)(&s), Duration::from_secs(2 + 3));
    }
}
