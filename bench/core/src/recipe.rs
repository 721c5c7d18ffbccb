//! [`Recipe`]: one lock recipe as its system's crate registers it, and [`ElectionRecipe`]:
//! one leader-election recipe (the `failover` workload's).
//!
//! Why: a recipe used to be an enum variant in core plus an arm in each of the registry's
//! tables (constructor, server group, expiry), so adding one meant editing crates that have
//! nothing to do with it. Now a system's crate lists its recipes
//! ([`System::recipes`](crate::System::recipes)) and everything lockbench needs to know about
//! one is in its entry: its name, the servers it runs on, how long a dead holder's lock lives,
//! whether it is deliberately broken, and how it is built from a scenario. `lockbench-registry`
//! collects them from the registered systems; nothing else names a recipe.
//!
//! Election recipes are registered the same way ([`System::elections`](crate::System::elections)),
//! with what the failover workload needs of one: its name, its servers (what `server-kill`
//! and `partition` act on), how long a dead leader's term lives (what the `pause` and
//! `partition` removals and the wait after a `server-kill` are measured against), and how it
//! is built for one run's election.

use crate::endpoints::Endpoints;
use crate::erased::AnyBackend;
use crate::erased_election::AnyElector;
use crate::ids::{BackendKind, ElectionKind};
use crate::scenario::Scenario;
use crate::system::Group;
use crate::traits::BackendError;
use std::time::Duration;

/// One lock recipe of a system.
#[derive(Clone, Copy)]
pub struct Recipe {
    /// Its name (`zk-fair`), as users type it.
    pub kind: BackendKind,
    /// The servers its clients use (what the server nemesis, the resource sampler and the
    /// compose fault plan act on for it).
    pub group: Group,
    /// How long a dead client's lock lives (the session timeout, the lease or key TTL, the
    /// time the server takes to notice a dead connection), from the scenario's knobs.
    pub expiry: &'static Expiry,
    /// Deliberately broken: it exists to prove a checker alive and is never part of a
    /// comparison.
    pub broken: bool,
    /// Builds the recipe's backend from the scenario's knobs and the cluster's endpoints.
    pub build: &'static Build,
}

/// How long a dead client's lock (or a dead leader's term) lives, from the scenario's knobs.
pub type Expiry = dyn Fn(&Scenario) -> Duration + Send + Sync;

/// A recipe's constructor. A function, or a closure over what a recipe made at run time
/// needs (an adapter's manifest), leaked once per recipe.
pub type Build = dyn Fn(&Scenario, &Endpoints) -> Result<AnyBackend, BackendError> + Send + Sync;

impl std::fmt::Debug for Recipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe")
            .field("kind", &self.kind)
            .field("group", &self.group)
            .field("broken", &self.broken)
            .finish()
    }
}

/// One leader-election recipe of a system.
#[derive(Clone, Copy)]
pub struct ElectionRecipe {
    /// Its name (`zk-election`), as users type it.
    pub kind: ElectionKind,
    /// The servers its candidates use (what the `server-kill` and `partition` removals act
    /// on).
    pub group: Group,
    /// How long a dead leader's term lives (the session timeout, the lease or key TTL), from
    /// the scenario's knobs.
    pub expiry: &'static Expiry,
    /// Builds the recipe's elector from the scenario's knobs, the cluster's endpoints and the
    /// election's name (one per run, so nothing an earlier run left takes part).
    pub build: &'static BuildElector,
}

/// An election recipe's constructor: `(scenario, endpoints, election name)`.
pub type BuildElector =
    dyn Fn(&Scenario, &Endpoints, &str) -> Result<AnyElector, BackendError> + Send + Sync;

impl std::fmt::Debug for ElectionRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElectionRecipe")
            .field("kind", &self.kind)
            .field("group", &self.group)
            .finish()
    }
}
