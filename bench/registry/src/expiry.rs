//! How long a dead client's lock (or a dead leader's term) lives on each recipe: the ZooKeeper
//! session timeout, the etcd lease TTL, the Redis / Redlock key TTL. Each recipe says, from its
//! own knob table (its `expiry`); this looks the recipe up and derives the checks and pauses
//! that depend on it.

use lockbench_core::scenario::ScenarioError;
use lockbench_core::{BackendKind, ElectionKind, Scenario};
use std::time::Duration;

/// How long a dead client's lock lives on `backend` (its recipe says: a session timeout, a
/// lease or key TTL, the time a server takes to notice a dead connection).
pub fn expiry(scenario: &Scenario, backend: BackendKind) -> Duration {
    (crate::backend::registered(backend).expiry)(scenario)
}

/// `workload.renew_every` must be shorter than every backend's lock life: a renewal after the
/// lock expired renews nothing.
pub fn check_renewals(scenario: &Scenario) -> Result<(), ScenarioError> {
    let Some(every) = scenario.workload.renew_every else {
        return Ok(());
    };
    let short = |b: &&BackendKind| every >= expiry(scenario, **b);
    match scenario.backends.iter().find(short) {
        Some(b) => Err(ScenarioError::new(
            "workload.renew_every",
            format!(
                "{} is not shorter than {b}'s lock life ({}): renew every fraction of it, \
                 e.g. a third",
                humantime::format_duration(every),
                humantime::format_duration(expiry(scenario, *b))
            ),
        )),
        None => Ok(()),
    }
}

/// The `fencing` holder's pause on `backend`: `workload.pause`, or twice the expiry.
pub fn holder_pause(scenario: &Scenario, backend: BackendKind) -> Duration {
    scenario
        .workload
        .pause
        .unwrap_or_else(|| expiry(scenario, backend) * 2)
}

/// How long a dead leader's term lives on `election` (its recipe says: a session timeout, a
/// lease or key TTL).
pub fn election_expiry(scenario: &Scenario, election: ElectionKind) -> Duration {
    (crate::election::registered_election(election).expiry)(scenario)
}

/// The `pause` and `partition` removals' length on `election`: `failover.pause`, or twice the
/// expiry.
pub fn leader_pause(scenario: &Scenario, election: ElectionKind) -> Duration {
    scenario
        .failover
        .pause
        .unwrap_or_else(|| election_expiry(scenario, election) * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str =
        "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 2\nkeys = 1\n";

    /// Moved from core with the check (it reads the knobs).
    #[test]
    fn renewals_must_come_within_every_backends_lock_life() {
        let sets = |s: &[&str]| -> Vec<String> { s.iter().map(|s| s.to_string()).collect() };
        let with = |s: &[&str]| crate::load_scenario("t", MINIMAL, &sets(s));
        let ok = with(&["workload.renew_every=600ms", "zookeeper.session_timeout=2s"]).unwrap();
        assert_eq!(ok.workload.renew_every, Some(Duration::from_millis(600)));
        assert_eq!(
            crate::load_scenario("again", &ok.to_toml(), &[]).unwrap(),
            ok
        );
        let err = with(&[
            "backends=zk-fair,redis-broken-renew",
            "redis.ttl=500ms",
            "workload.renew_every=600ms",
        ])
        .unwrap_err();
        assert!(
            err.contains("workload.renew_every") && err.contains("redis-broken-renew"),
            "{err}"
        );
        let err = with(&["workload.renew_every=0s"]).unwrap_err();
        assert!(err.contains("workload.renew_every"), "{err}");
        let err = with(&["workload.kind=fencing", "workload.renew_every=100ms"]).unwrap_err();
        assert!(err.contains("workload.renew_every"), "{err}");
    }

    #[test]
    fn expiry_reads_the_recipes_knob_table() {
        let text = "name = \"t\"\nbackends = [\"zk-herd\"]\n[workload]\nkind = \"herd\"\n\
                    clients = 2\nkeys = 1\nhold = \"1ms\"\n[zookeeper]\nsession_timeout = \"3s\"\n\
                    [redlock]\nttl = \"7s\"\n";
        let s = crate::load_scenario("t", text, &[]).unwrap();
        let kind = |n: &str| crate::parse_backend(n).unwrap();
        assert_eq!(expiry(&s, kind("zk-herd")), Duration::from_secs(3));
        assert_eq!(expiry(&s, kind("redlock")), Duration::from_secs(7));
        assert_eq!(expiry(&s, kind("redis-setnx")), Duration::from_secs(10));
        assert_eq!(holder_pause(&s, kind("zk-herd")), Duration::from_secs(6));
        let election = |n: &str| crate::parse_election(n).unwrap();
        assert_eq!(
            leader_pause(&s, election("zk-election")),
            Duration::from_secs(6)
        );
        for (name, life) in [
            ("etcd-election", 5),
            ("etcd-lease-election", 5),
            ("redis-lease-election", 10),
        ] {
            let expiry = election_expiry(&s, election(name));
            assert_eq!(expiry, Duration::from_secs(life), "{name}");
        }
    }
}
