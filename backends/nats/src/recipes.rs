//! The NATS system's lock recipe, as `lockbench-registry` finds it (through
//! `System::recipes`): its name, servers, lock life and constructor.
//!
//! Its `expiry` is the bucket's `max_age` (`[nats] ttl`): a dead, paused or partitioned
//! holder's entry is removed that long after its last write (plus the server's removal
//! timer, well under a second here).

use crate::{NatsBackend, NatsKnobs};
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Group, Recipe, Scenario};
use std::time::Duration;

/// nats-kv: create-if-absent on a JetStream KV key, the revision as the fencing token.
pub const NATS_KV: BackendKind = BackendKind::of("nats-kv");

fn knobs(scenario: &Scenario) -> Result<NatsKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

/// A dead holder's lock lives the bucket's max age.
fn max_age(scenario: &Scenario) -> Duration {
    knobs(scenario)
        .expect("knobs are checked when a scenario is loaded")
        .ttl
}

fn build(s: &Scenario, e: &Endpoints) -> Result<AnyBackend, BackendError> {
    Ok(AnyBackend::new(NatsBackend::new(e, &knobs(s)?)?))
}

/// The recipes (what the system's `System::recipes` returns).
pub static RECIPES: &[Recipe] = &[Recipe {
    kind: NATS_KV,
    group: Group::listed(crate::NATS),
    expiry: &max_age,
    broken: false,
    build: &build,
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_the_buckets_max_age() {
        let text = "name = \"t\"\nseed = 1\nbackends = [\"nats-kv\"]\nduration = \"1s\"\n\
                    [workload]\nclients = 1\nkeys = 1\n[nats]\nttl = \"3s\"\n";
        let s = Scenario::load("test", text, &[]).unwrap();
        assert_eq!((RECIPES[0].expiry)(&s), Duration::from_secs(3));
        assert_eq!(RECIPES[0].group.name(), "nats");
    }
}
