//! Where each system keeps a run's lock keys, and how to give one run keys of its own.

use lockbench_core::Scenario;

/// Moves every system's lock keys under `id`, so this run never meets a key another run left
/// behind: a Redis key an acquire cut short lives until its TTL, an etcd key until its lease
/// expires (ZooKeeper's ephemeral nodes die with their session, and its recipes already take a
/// fresh path per run).
pub fn separate(scenario: &mut Scenario, id: &str) {
    scenario.redis.prefix = format!("{}{id}:", scenario.redis.prefix);
    scenario.redlock.prefix = format!("{}{id}:", scenario.redlock.prefix);
    scenario.etcd.prefix = format!("{}/{id}", scenario.etcd.prefix);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_ids_give_disjoint_prefixes() {
        let text = "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 1\nkeys = 1\n";
        let base = Scenario::load("t", text, &[]).unwrap();
        let (mut a, mut b) = (base.clone(), base.clone());
        separate(&mut a, "s1");
        separate(&mut b, "s2");
        for (x, y, z) in [
            (&a.redis.prefix, &b.redis.prefix, &base.redis.prefix),
            (&a.redlock.prefix, &b.redlock.prefix, &base.redlock.prefix),
            (&a.etcd.prefix, &b.etcd.prefix, &base.etcd.prefix),
        ] {
            assert!(
                x.starts_with(z.as_str()) && x != y && !y.starts_with(x.as_str()),
                "{x} {y}"
            );
        }
    }
}
