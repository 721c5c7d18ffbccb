//! Each client's random choices, drawn from its own seeded RNG.
//!
//! The RNG of client slot `i` is seeded from the scenario seed and `i`, so the same seed gives
//! the same key order and the same hold/think draws on every run, whatever the scheduling.

use lockbench_core::scenario::{Dist, KeyChoice, Workload};
use lockbench_core::{KeyId, Seed, Stream};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The seeded choices of one client slot.
#[derive(Clone, Debug)]
pub struct ClientPlan {
    rng: ChaCha8Rng,
    keys: u32,
    first: Option<KeyId>,
    fixed: bool,
    hold: Dist,
    think: Dist,
    read_fraction: f64,
}

impl ClientPlan {
    /// The plan of client slot `slot` under `workload`, seeded from `seed`.
    pub fn new(workload: &Workload, seed: u64, slot: u32) -> ClientPlan {
        ClientPlan {
            rng: Seed(seed).rng(Stream::Client(slot)),
            keys: workload.keys,
            first: Some(KeyId(slot % workload.keys)),
            fixed: workload.key_choice == KeyChoice::PerClient,
            hold: workload.hold,
            think: workload.think,
            read_fraction: workload.read_fraction,
        }
    }

    /// Whether the next acquire is shared (read). Draws nothing when `read_fraction` is 0, so
    /// exclusive-only workloads keep the draws (and results) they had before shared locks.
    pub fn next_shared(&mut self) -> bool {
        self.read_fraction > 0.0 && self.rng.random::<f64>() < self.read_fraction
    }

    /// The key of the next acquire: the slot's own key first (so K keys with K clients start
    /// spread out), uniformly random after.
    pub fn next_key(&mut self) -> KeyId {
        match self.first {
            Some(k) if self.fixed => k,
            _ => self
                .first
                .take()
                .unwrap_or_else(|| KeyId(self.rng.random_range(0..self.keys))),
        }
    }

    /// How long to hold the next grant.
    pub fn hold(&mut self) -> Duration {
        draw(&self.hold, &mut self.rng)
    }

    /// How long to think after the next release.
    pub fn think(&mut self) -> Duration {
        draw(&self.think, &mut self.rng)
    }
}

fn draw(d: &Dist, rng: &mut ChaCha8Rng) -> Duration {
    if d.is_zero() {
        Duration::ZERO
    } else {
        d.sample(rng.random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Scenario;

    #[test]
    fn the_same_seed_gives_the_same_choices() {
        let text = "name='t'\nbackends=['zk-fair']\n[workload]\nclients=4\nkeys=8\nhold={exponential='2ms'}\n";
        let s = Scenario::load("t", text, &[]).unwrap();
        let draws = |seed| {
            let mut p = ClientPlan::new(&s.workload, seed, 3);
            (0..20)
                .map(|_| (p.next_key(), p.hold()))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert_eq!(draws(7)[0].0, KeyId(3));
        let fixed = Scenario::load("t", text, &["workload.key_choice=per-client".into()]).unwrap();
        let mut p = ClientPlan::new(&fixed.workload, 7, 5);
        assert!((0..20).all(|_| p.next_key() == KeyId(5)));
    }
}
