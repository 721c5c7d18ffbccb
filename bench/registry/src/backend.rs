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

/// The recipe called `kind`: a registered system's, or an adapter's (`lib:NAME`, a
/// manifest's path), made from its manifest on first use.
pub fn recipe(kind: BackendKind) -> Option<&'static Recipe> {
    find(kind).ok()
}

fn find(kind: BackendKind) -> Result<&'static Recipe, String> {
    if lockbench_adapter::is_adapter(kind.name()) {
        return crate::adapter::recipe(kind);
    }
    recipes().find(|r| r.kind == kind).ok_or_else(|| {
        format!(
            "unknown backend `{kind}`; expected one of: {}, or an adapter (lib:NAME: {}; or \
             the path of an adapter.toml)",
            backend_names().join(", "),
            lockbench_adapter::manifest::builtin_names().join(", ")
        )
    })
}

/// The registered recipe `kind`; a kind reaches here only after scenario loading
/// ([`crate::load_scenario`]) accepted it, so a miss is a bug.
pub(crate) fn registered(kind: BackendKind) -> &'static Recipe {
    recipe(kind).unwrap_or_else(|| panic!("{kind} is not a registered recipe"))
}

/// The recipe typed as `name`; the error lists the registered ones (or says what is wrong
/// with an adapter's manifest).
pub fn parse_backend(name: &str) -> Result<BackendKind, String> {
    find(BackendKind::named(name)).map(|r| r.kind)
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
