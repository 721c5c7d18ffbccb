//! One scenario seed, many independent random streams.
//!
//! Every random choice of a run draws from the scenario's seed (CONTRIBUTING, "Rules of the
//! code"), but two parts of the run must not share a stream: adding a fault would then move
//! every client's key choices. Each role draws from its own [`Stream`], derived here and only
//! here, so a role has exactly one salt and a new role cannot reuse another's by accident.
//! The derivations are those the roles used before this type existed, so a seed gives the
//! same client plans, fault schedules, link and managed-cluster server targets as before.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The scenario's seed (`seed` in the scenario file, `--seed` on the command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Seed(pub u64);

/// A role that draws random numbers during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Client slot `n`'s key, hold, think and read/write draws.
    Client(u32),
    /// The `n`-th fault spec's jitter and placement in the schedule.
    Faults(usize),
    /// Which servers a server nemesis acts on (managed, compose or stand-in, lock backends and
    /// election recipes alike).
    ServerTargets,
    /// Which client links a link nemesis cuts or slows.
    LinkTargets,
    /// The failover workload's choice of candidate and removal in each round.
    FailoverRounds,
}

/// Spreads small integers over all 64 bits (2^64 / golden ratio).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Seed {
    /// The seed of `stream`.
    pub fn stream(self, stream: Stream) -> u64 {
        let s = self.0;
        match stream {
            Stream::Client(slot) => s ^ (u64::from(slot) + 1).wrapping_mul(GOLDEN),
            Stream::Faults(i) => s ^ 0x6E65_6D65_7369_7321 ^ (i as u64 + 1).wrapping_mul(GOLDEN),
            Stream::ServerTargets => s ^ 0x5345_5256,
            Stream::LinkTargets => s ^ 0x4c49_4e4b,
            Stream::FailoverRounds => s ^ 0x524f_554e,
        }
    }

    /// A generator for `stream`.
    pub fn rng(self, stream: Stream) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.stream(stream))
    }

    /// The seed of repetition `k` (1-based) of `lockbench run --repeat`: the first is the
    /// scenario's own seed, each further one the next integer, wrapping to 0 past
    /// `i64::MAX` (the largest seed a saved `scenario.toml` can hold: TOML integers are i64).
    pub fn repetition(self, k: u32) -> Seed {
        let next = self.0.wrapping_add(u64::from(k).saturating_sub(1));
        Seed(next & i64::MAX as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The roles' seeds differ from each other (for a few seeds and slots), so no two roles
    /// share draws.
    #[test]
    fn streams_are_distinct() {
        for seed in [0, 1, 42, u64::MAX] {
            let s = Seed(seed);
            let mut all = vec![
                s.stream(Stream::ServerTargets),
                s.stream(Stream::LinkTargets),
                s.stream(Stream::FailoverRounds),
            ];
            all.extend((0..64).map(|n| s.stream(Stream::Client(n))));
            all.extend((0..8).map(|n| s.stream(Stream::Faults(n))));
            let distinct: BTreeSet<u64> = all.iter().copied().collect();
            assert_eq!(distinct.len(), all.len(), "seed {seed}");
        }
    }

    #[test]
    fn repetitions_count_up_from_the_seed() {
        assert_eq!(Seed(7).repetition(1), Seed(7));
        assert_eq!(Seed(7).repetition(3), Seed(9));
        assert_eq!(Seed(i64::MAX as u64).repetition(2), Seed(0));
        assert_eq!(Seed(i64::MAX as u64 - 1).repetition(3), Seed(0));
    }
}
