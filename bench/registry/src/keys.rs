//! Where each system keeps a run's lock keys, and how to give one run keys of its own.

use lockbench_core::Scenario;

/// Moves every system's lock keys under `id`, so this run never meets a key another run left
/// behind: a Redis key an acquire cut short lives until its TTL, an etcd key until its lease
/// expires (ZooKeeper's ephemeral nodes die with their session, and its recipes already take a
/// fresh path per run). Each system says how
/// ([`System::separate_keys`](lockbench_core::System::separate_keys)).
pub fn separate(scenario: &mut Scenario, id: &str) {
    for system in crate::SYSTEMS {
        let separated = system.separate_keys(&mut scenario.knobs, id);
        separated.unwrap_or_else(|e| panic!("knobs are checked when a scenario is loaded: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_etcd::EtcdKnobs;
    use lockbench_redis::{RedisKnobs, RedlockKnobs};

    #[test]
    fn two_ids_give_disjoint_prefixes() {
        let text = "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 1\nkeys = 1\n";
        let base = crate::load_scenario("t", text, &[]).unwrap();
        let (mut a, mut b) = (base.clone(), base.clone());
        separate(&mut a, "s1");
        separate(&mut b, "s2");
        let prefixes = |s: &Scenario| {
            let k = &s.knobs;
            [
                k.get::<RedisKnobs>().unwrap().prefix,
                k.get::<RedlockKnobs>().unwrap().prefix,
                k.get::<EtcdKnobs>().unwrap().prefix,
            ]
        };
        for ((x, y), z) in prefixes(&a)
            .iter()
            .zip(prefixes(&b).iter())
            .zip(prefixes(&base).iter())
        {
            assert!(
                x.starts_with(z.as_str()) && x != y && !y.starts_with(x.as_str()),
                "{x} {y}"
            );
        }
    }
}
