//! How long a waiter sleeps before asking again: `retry_delay + U[0, retry_jitter)`.
//!
//! The jitter is drawn from a `ChaCha8Rng` seeded with the scenario's seed, on a stream chosen
//! by the client id, so two runs with the same seed make the same draws and no two clients
//! share a sequence. (Redis recipes poll: Redis has no way to tell a waiter the key is free
//! without pub/sub, which the published recipes do not use.)

use lockbench_core::ClientId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// A waiter's retry schedule.
#[derive(Debug)]
pub(crate) struct Backoff {
    rng: ChaCha8Rng,
    delay: Duration,
    jitter_ns: u64,
}

impl Backoff {
    /// The schedule of `client` in a run seeded with `seed`.
    pub(crate) fn new(seed: u64, client: ClientId, delay: Duration, jitter: Duration) -> Backoff {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(client.0));
        Backoff {
            rng,
            delay,
            jitter_ns: u64::try_from(jitter.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The next sleep.
    pub(crate) fn next_delay(&mut self) -> Duration {
        if self.jitter_ns == 0 {
            return self.delay;
        }
        self.delay + Duration::from_nanos(self.rng.random_range(0..self.jitter_ns))
    }
}

/// A one-line description for [`lockbench_core::BackendInfo::waits_by`].
pub(crate) fn waits_by(delay: Duration, jitter: Duration) -> String {
    format!("polling: retry after retry_delay + U[0,retry_jitter) = {delay:?} + U[0,{jitter:?})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_and_clients_differ() {
        let d = Duration::from_millis(1);
        let j = Duration::from_millis(2);
        let draws = |c| {
            let mut b = Backoff::new(7, ClientId(c), d, j);
            (0..8).map(|_| b.next_delay()).collect::<Vec<_>>()
        };
        assert_eq!(draws(1), draws(1));
        assert_ne!(draws(1), draws(2));
        assert!(draws(3).iter().all(|x| *x >= d && *x < d + j));
    }
}
