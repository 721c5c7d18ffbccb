//! A worker's clock as the coordinator sees it.
//!
//! Workers on other hosts have other clocks. The coordinator probes each worker every
//! [`PROBE_EVERY`](crate::link::PROBE_EVERY) (NTP-style): it notes its own run time when it
//! sends a probe (`sent`), the worker answers with its run clock when it read it (`worker`), and
//! the coordinator notes when the answer arrived (`received`). Whatever the delays each way, the
//! worker read the probe at some coordinator time in `[sent, received]`, so the worker's clock
//! was ahead of the coordinator's by `worker - midpoint`, give or take half the round trip.

use lockbench_core::Nanos;
use serde::{Deserialize, Serialize};

/// One answered probe, on the coordinator's run clock except `worker`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSample {
    /// When the coordinator sent the probe.
    pub sent: Nanos,
    /// The worker's run clock when it read the probe.
    pub worker: Nanos,
    /// When the coordinator read the answer.
    pub received: Nanos,
}

impl ProbeSample {
    /// How far the worker's clock is ahead of the coordinator's (negative: behind), in
    /// nanoseconds, from the round trip's midpoint.
    pub fn offset(&self) -> i64 {
        let mid = self.sent.0 as i128 + (self.received.0 as i128 - self.sent.0 as i128) / 2;
        (self.worker.0 as i128 - mid) as i64
    }

    /// Half the round trip: [`ProbeSample::offset`] is right to within this.
    pub fn half_rtt(&self) -> u64 {
        self.received.0.saturating_sub(self.sent.0).div_ceil(2)
    }
}

/// A span of the coordinator's run clock in which something happened: `lo ..= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interval {
    /// The earliest it can have happened.
    pub lo: Nanos,
    /// The latest it can have happened.
    pub hi: Nanos,
}

impl Interval {
    /// Its width (the uncertainty of a mapped time, twice over).
    pub fn width(&self) -> u64 {
        self.hi.0 - self.lo.0
    }

    /// Contains `t`.
    pub fn contains(&self, t: Nanos) -> bool {
        self.lo <= t && t <= self.hi
    }
}

/// Maps a worker's run-clock times onto the coordinator's, as intervals, from its probes.
///
/// At a probe the worker's offset lies in `[worker - received, worker - sent]` (the worker read
/// the probe at some coordinator time in `[sent, received]`). Between probes it can change by
/// at most the drift allowance times the time elapsed, so a worker time `t` happened at a
/// coordinator time within `t - offset`, widened by that much. Every probe gives such an
/// interval and `t` is in each: [`ClockMap::map`] returns the intersection of those of the
/// [`NEAREST`] probes on either side of `t` (so one probe that waited in a busy machine's run
/// queue, with a long round trip, does not widen it), or their union if the worker drifted
/// faster than allowed.
#[derive(Clone, Debug)]
pub struct ClockMap {
    samples: Vec<ProbeSample>,
    drift_ppm: u64,
}

/// How many probes on either side of a time [`ClockMap::map`] intersects.
pub const NEAREST: usize = 8;

/// The default drift allowance: 100 ppm, twice a typical crystal's tolerance (NTP assumes
/// 15 ppm for a disciplined clock and 500 ppm at most).
pub const DRIFT_ALLOWANCE_PPM: u64 = 100;

impl ClockMap {
    /// The map from `samples` (any order) with a drift allowance of `drift_ppm` parts per
    /// million; `None` without a sample.
    pub fn new(mut samples: Vec<ProbeSample>, drift_ppm: u64) -> Option<ClockMap> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by_key(|s| s.worker);
        Some(ClockMap { samples, drift_ppm })
    }

    /// The coordinator-time interval in which worker time `t` happened.
    pub fn map(&self, t: Nanos) -> Interval {
        let i = self.samples.partition_point(|s| s.worker <= t);
        let near = &self.samples[i.saturating_sub(NEAREST)..(i + NEAREST).min(self.samples.len())];
        let each = near.iter().map(|s| self.from(s, t));
        let (lo, hi) = each
            .clone()
            .fold((Nanos(0), Nanos(u64::MAX)), |(lo, hi), x| {
                (lo.max(x.lo), hi.min(x.hi))
            });
        if lo <= hi {
            return Interval { lo, hi };
        }
        // Disjoint: the worker drifted faster than allowed. Their union still holds `t`.
        each.fold(
            Interval {
                lo: Nanos(u64::MAX),
                hi: Nanos(0),
            },
            |u, x| Interval {
                lo: u.lo.min(x.lo),
                hi: u.hi.max(x.hi),
            },
        )
    }

    /// The largest half-width of the intervals the probes alone give (half the slowest round
    /// trip), for results.
    pub fn bound(&self) -> u64 {
        self.samples.iter().map(|s| s.half_rtt()).max().unwrap_or(0)
    }

    /// `t`'s interval from sample `s` alone.
    fn from(&self, s: &ProbeSample, t: Nanos) -> Interval {
        let elapsed = t.0.abs_diff(s.worker.0) as u128;
        let drift = (elapsed * self.drift_ppm as u128).div_ceil(1_000_000) as i128;
        let t = t.0 as i128;
        // offset in [worker - received, worker - sent]; coordinator time = t - offset.
        let lo = t - (s.worker.0 as i128 - s.sent.0 as i128) - drift;
        let hi = t - (s.worker.0 as i128 - s.received.0 as i128) + drift;
        Interval {
            lo: Nanos(lo.max(0) as u64),
            hi: Nanos(hi.max(0) as u64),
        }
    }
}

/// A deliberate error in a worker's clock, for tests of the mapping and of the checkers'
/// soundness (never for real runs): the worker stamps its ops and answers probes with
/// `t + offset + t * drift_ppm / 1e6` instead of `t` (a time that would be negative reads 0,
/// so an offset behind only works once the run is older than it). `lockbench worker
/// --coordinator` takes it from [`TEST_SKEW_ENV`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TestSkew {
    /// Added to every time, nanoseconds (negative: behind).
    pub offset_ns: i64,
    /// Parts per million the clock runs fast (negative: slow).
    pub drift_ppm: i64,
}

/// `OFFSET_MS,DRIFT_PPM`, e.g. `250,80`: a worker clock 250 ms ahead and 80 ppm fast.
pub const TEST_SKEW_ENV: &str = "LOCKBENCH_TEST_CLOCK_SKEW";

impl TestSkew {
    /// The skewed reading of true worker time `t`.
    pub fn apply(&self, t: Nanos) -> Nanos {
        let t = t.0 as i128;
        let skewed = t + self.offset_ns as i128 + t * self.drift_ppm as i128 / 1_000_000;
        Nanos(skewed.max(0) as u64)
    }

    /// The skew in [`TEST_SKEW_ENV`], `None` when unset; an error when malformed.
    pub fn from_env() -> Result<Option<TestSkew>, String> {
        let Ok(v) = std::env::var(TEST_SKEW_ENV) else {
            return Ok(None);
        };
        let parse = || -> Option<TestSkew> {
            let (ms, ppm) = v.split_once(',')?;
            Some(TestSkew {
                offset_ns: ms.trim().parse::<i64>().ok()?.checked_mul(1_000_000)?,
                drift_ppm: ppm.trim().parse().ok()?,
            })
        };
        parse().map(Some).ok_or_else(|| {
            format!("{TEST_SKEW_ENV}={v:?}: expected OFFSET_MS,DRIFT_PPM (e.g. 250,80)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A worker whose clock runs `ppm` fast and `offset` ns ahead: worker time at coordinator
    /// time `c`.
    fn skewed(c: u64, offset: i64, ppm: i64) -> Nanos {
        Nanos((c as i128 + offset as i128 + c as i128 * ppm as i128 / 1_000_000) as u64)
    }

    /// Probes a skewed, drifting worker once a second with random one-way delays; every
    /// coordinator time then lies in the interval its worker time maps to, and the interval is
    /// no wider than a round trip plus the drift allowance over half a probe period.
    #[test]
    fn a_skewed_drifting_clock_maps_to_intervals_that_hold_the_truth() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (offset, ppm) = (-250_000_000i64, 80i64); // 250 ms behind, 80 ppm fast
        let start = 300_000_000u64;
        let mut samples = Vec::new();
        for k in 0..30u64 {
            let sent = start + k * 1_000_000_000;
            let there = rng.random_range(50_000..2_000_000u64);
            let back = rng.random_range(50_000..2_000_000u64);
            samples.push(ProbeSample {
                sent: Nanos(sent),
                worker: skewed(sent + there, offset, ppm),
                received: Nanos(sent + there + back),
            });
        }
        let map = ClockMap::new(samples, DRIFT_ALLOWANCE_PPM).unwrap();
        assert!(map.bound() <= 2_000_000);
        for _ in 0..10_000 {
            let c = rng.random_range(start..start + 29_000_000_000);
            let i = map.map(skewed(c, offset, ppm));
            assert!(i.contains(Nanos(c)), "{c} not in {i:?}");
            assert!(i.width() <= 4_000_000 + 2 * 50_000, "{i:?} is too wide");
        }
        // Outside the probed span the interval widens with the allowance, and still holds.
        let c = start + 40_000_000_000;
        let i = map.map(skewed(c, offset, ppm));
        assert!(i.contains(Nanos(c)), "{i:?}");
        assert!(i.width() > 2_000_000);
    }

    /// The midpoint offset of a symmetric round trip is exact.
    #[test]
    fn a_probe_gives_the_offset_from_its_midpoint() {
        let s = ProbeSample {
            sent: Nanos(1_000),
            worker: Nanos(5_500),
            received: Nanos(2_000),
        };
        assert_eq!(s.offset(), 4_000);
        assert_eq!(s.half_rtt(), 500);
    }
}
