//! The lock recipes of every registered system, and building one by name.

use crate::SYSTEMS;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Recipe, Scenario};

/// Every registered recipe, system by system in [`SYSTEMS`] order, each system's in its own
/// order.
pub fn recipes() -> impl Iterator<Item = &'static Recipe> {
    SYSTEMS.iter().flat_map(|s| s.recipes().iter())
}

/// Every registered recipe's kind, in [`recipes`] order.
pub fn backends() -> impl Iterator<Item = BackendKind> {
    recipes().map(|r| r.kind)
}

/// The registered recipe called `kind`.
pub fn recipe(kind: BackendKind) -> Option<&'static Recipe> {
    recipes().find(|r| r.kind == kind)
}

/// The registered recipe `kind`; a kind reaches here only after scenario loading
/// ([`crate::load_scenario`]) accepted it, so a miss is a bug.
pub(crate) fn registered(kind: BackendKind) -> &'static Recipe {
    recipe(kind).unwrap_or_else(|| panic!("{kind} is not a registered recipe"))
}

/// The recipe typed as `name`; the error lists the registered ones.
pub fn parse_backend(name: &str) -> Result<BackendKind, String> {
    match recipes().find(|r| r.kind.name() == name) {
        Some(r) => Ok(r.kind),
        None => Err(format!(
            "unknown backend `{name}`; expected one of: {}",
            backend_names().join(", ")
        )),
    }
}

/// Every registered recipe's name.
pub fn backend_names() -> Vec<&'static str> {
    backends().map(BackendKind::name).collect()
}

/// Builds `kind`'s backend from `scenario`'s knobs and `endpoints`: the one constructor the
/// coordinator, worker processes, `lockbench scale` and the benches share.
pub fn backend(
    kind: BackendKind,
    scenario: &Scenario,
    endpoints: &Endpoints,
) -> Result<AnyBackend, BackendError> {
    match recipe(kind) {
        Some(r) => (r.build)(scenario, endpoints),
        None => Err(BackendError::Config(
            parse_backend(kind.name()).unwrap_err(),
        )),
    }
}
