//! How late lockbench's timers fire, kept in memory that does not grow with the run.
//!
//! The probe wakes every 5 ms, about 200 samples a second. Keeping every sample until the run
//! ended (to take the measured window's p99 exactly) cost 16 bytes each: 11.5 MB an hour, which
//! a day-long soak would turn into hundreds of MB. So the samples of the last [`RECENT`] are
//! kept as they are, and older ones are folded into a histogram once the measured window's
//! start is known ([`crate::sampler::Sampler::measure_from`]); those before it are dropped. When the sampler
//! stops, the recent samples are judged against the window's end exactly and folded in too.
//!
//! The result is exact when the sampler stops within [`RECENT`] of the window's end (the run
//! engine stops it right after the clients have stopped). Until the window's start is known
//! nothing is folded, so a caller that never says it keeps every sample, as before.

use hdrhistogram::Histogram;
use lockbench_core::Nanos;
use std::collections::VecDeque;
use std::time::Duration;

/// How long samples are kept unfolded.
pub const RECENT: Duration = Duration::from_secs(60);

/// The probe's samples: recent ones as they are, older ones in a histogram (µs).
pub(crate) struct LagRecord {
    recent: VecDeque<(Nanos, u64)>,
    folded: Histogram<u64>,
    from: Option<Nanos>,
}

impl LagRecord {
    pub(crate) fn new() -> LagRecord {
        LagRecord {
            recent: VecDeque::with_capacity(4096),
            // Up to an hour late, 3 significant figures (~170 KB); later ones count as an hour.
            folded: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            from: None,
        }
    }

    /// The measured window starts at `from`: samples before it will never count.
    pub(crate) fn measure_from(&mut self, from: Nanos) {
        self.from = Some(from);
    }

    /// Takes the sample `lag_us` taken at `t` (samples arrive in time order).
    pub(crate) fn push(&mut self, t: Nanos, lag_us: u64) {
        self.recent.push_back((t, lag_us));
        let Some(from) = self.from else { return };
        while let Some(&(t0, lag)) = self.recent.front() {
            if t.0.saturating_sub(t0.0) <= RECENT.as_nanos() as u64 {
                break;
            }
            self.recent.pop_front();
            if t0 >= from {
                self.folded.saturating_record(lag);
            }
        }
    }

    /// Samples taken at `t` with `from <= t <= to`: the folded ones and the recent ones inside.
    pub(crate) fn window(mut self, from: Nanos, to: Nanos) -> Histogram<u64> {
        for (t, lag) in self.recent.drain(..) {
            if t >= from && t <= to {
                self.folded.saturating_record(lag);
            }
        }
        self.folded
    }

    /// Samples held as they are (not folded), for tests.
    #[cfg(test)]
    fn unfolded(&self) -> usize {
        self.recent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn memory_stays_bounded_and_the_window_is_exact() {
        let mut r = LagRecord::new();
        let every = 5_000_000; // 5 ms
        // Warm-up: 2 s with a huge lag that must not count.
        let mut t = 0;
        while t < 2 * S {
            r.push(Nanos(t), 900_000);
            t += every;
        }
        r.measure_from(Nanos(2 * S));
        // The measured window, 10 minutes: lag = 1 ms, but 1% of samples 40 ms.
        let to = 602 * S;
        let mut n = 0u64;
        while t <= to {
            n += 1;
            r.push(Nanos(t), if n.is_multiple_of(100) { 40_000 } else { 1_000 });
            t += every;
        }
        // After the window (the analysis, say): a huge lag again, recorded before it stops.
        let stop = to + 20 * S;
        while t < stop {
            r.push(Nanos(t), 700_000);
            t += every;
        }
        // At most RECENT's worth of samples unfolded, not the 124,000 the run took.
        let per_s = S / every;
        assert!(
            r.unfolded() as u64 <= (RECENT.as_secs() + 1) * per_s,
            "{}",
            r.unfolded()
        );
        let h = r.window(Nanos(2 * S), Nanos(to));
        assert_eq!(h.len(), n, "exactly the window's samples");
        assert_eq!(h.max(), h.highest_equivalent(40_000));
        assert_eq!(h.value_at_quantile(0.98), 1_000);
        assert_eq!(h.value_at_quantile(0.995), h.highest_equivalent(40_000));
    }

    #[test]
    fn without_a_window_start_nothing_is_folded() {
        let mut r = LagRecord::new();
        for i in 0..100_000u64 {
            r.push(Nanos(i * 5_000_000), 1);
        }
        assert_eq!(r.unfolded(), 100_000);
        assert_eq!(r.window(Nanos(0), Nanos(u64::MAX)).len(), 100_000);
    }
}
