//! Steady state before measuring (`[steady]`).
//!
//! A server fresh from its start is not the server a user runs: ZooKeeper's JVM compiles its
//! hot paths over its first minute, so a run right after `lockbench up` measures the warm-up,
//! and two identical runs differ by more than any regression worth catching. With `[steady]`,
//! each lock backend first runs short warm-up rounds of the scenario's own workload (no
//! faults; nothing kept but their figures) until it has stopped drifting, the stopping rule of
//! warm-up iterations that end when successive ones agree, taken over windows so one noisy
//! round neither ends nor prolongs it: the mean throughput of the last `window` rounds is
//! within `tolerance` of the mean of the `window` rounds before them, and so is the mean
//! acquire p50 within `p50_tolerance`. Up to `max`; a backend that has not settled by then is
//! measured anyway and its result says so.
//!
//! Why p50 has its own, looser bound: a round's median is far noisier than its throughput on
//! recipes that wait by polling (redis-setnx's per-round p50 varied by 20-30 % on a warm
//! server whose throughput varied by 3 %); in a closed loop a drift shows in the throughput
//! first (Little's law ties it to the mean latency), so the p50 bound catches a shift of the
//! distribution's shape, not the noise.
//!
//! ```toml
//! [steady]
//! max = "60s"          # the longest warm-up; "0s" (the default) turns it off
//! round = "1s"         # one round's length
//! window = 5           # rounds a side of the comparison
//! tolerance = 0.05     # throughput: how far the newer window's mean may be from the older's
//! p50_tolerance = 0.2  # acquire p50: the same
//! ```

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How each lock backend is warmed up before it is measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Steady {
    /// The longest warm-up; zero turns it off.
    #[serde(with = "humantime_serde")]
    pub max: Duration,
    /// One warm-up round's length.
    #[serde(with = "humantime_serde")]
    pub round: Duration,
    /// How many rounds each of the two compared windows holds.
    pub window: u32,
    /// How far the newer window's mean throughput may be from the older's, as a share of it.
    pub tolerance: f64,
    /// How far the newer window's mean acquire p50 may be from the older's, as a share of it.
    pub p50_tolerance: f64,
}

impl Default for Steady {
    fn default() -> Steady {
        Steady {
            max: Duration::ZERO,
            round: Duration::from_secs(1),
            window: 5,
            tolerance: 0.05,
            p50_tolerance: 0.2,
        }
    }
}

/// One warm-up round's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Acquisitions per second.
    pub throughput_per_s: f64,
    /// Median acquire latency, µs.
    pub acquire_p50_us: u64,
}

impl Steady {
    /// `true` when warm-up is on.
    pub fn enabled(&self) -> bool {
        !self.max.is_zero()
    }

    /// Checks values that parse but cannot work: a problem as (field, what is wrong).
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if !self.enabled() {
            return Ok(());
        }
        if self.round.is_zero() {
            return Err(("steady.round", "must be above zero"));
        }
        if self.window == 0 {
            return Err(("steady.window", "must be at least 1 round"));
        }
        for (field, t) in [
            ("steady.tolerance", self.tolerance),
            ("steady.p50_tolerance", self.p50_tolerance),
        ] {
            if !(t > 0.0 && t < 1.0) {
                return Err((field, "must be a share between 0 and 1, e.g. 0.05 for 5 %"));
            }
        }
        if self.max < self.round * (2 * self.window) {
            return Err((
                "steady.max",
                "must leave room for two windows of rounds (at least round x window x 2), or be 0s for no warm-up",
            ));
        }
        Ok(())
    }

    /// `true` when `rounds` have stopped drifting: the last `window` rounds' mean throughput
    /// and mean acquire p50 are each within their tolerance of the `window` rounds' before
    /// them. A round without acquisitions never settles.
    pub fn settled(&self, rounds: &[Round]) -> bool {
        let w = self.window as usize;
        if w == 0 || rounds.len() < 2 * w {
            return false;
        }
        let recent = &rounds[rounds.len() - 2 * w..];
        if recent.iter().any(|r| r.throughput_per_s <= 0.0) {
            return false;
        }
        let (older, newer) = recent.split_at(w);
        let mean = |rs: &[Round], f: fn(&Round) -> f64| rs.iter().map(f).sum::<f64>() / w as f64;
        let agree = |f: fn(&Round) -> f64, tolerance: f64| {
            let (a, b) = (mean(older, f), mean(newer, f));
            a > 0.0 && (b - a).abs() <= tolerance * a
        };
        agree(|r| r.throughput_per_s, self.tolerance)
            && agree(|r| r.acquire_p50_us as f64, self.p50_tolerance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(figures: &[(f64, u64)]) -> Vec<Round> {
        figures
            .iter()
            .map(|&(throughput_per_s, acquire_p50_us)| Round {
                throughput_per_s,
                acquire_p50_us,
            })
            .collect()
    }

    fn on(window: u32) -> Steady {
        Steady {
            max: Duration::from_secs(30),
            window,
            ..Steady::default()
        }
    }

    #[test]
    fn a_warm_up_that_levelled_off_has_settled() {
        let r = rounds(&[
            (87.0, 70_975),
            (132.0, 51_871),
            (200.0, 500),
            (210.0, 480),
            (195.0, 520),
            (205.0, 490),
        ]);
        assert!(on(2).settled(&r));
        assert!(
            !on(3).settled(&r),
            "the older window still holds the first rounds"
        );
    }

    #[test]
    fn a_rising_throughput_has_not_settled() {
        let r = rounds(&[(150.0, 500), (160.0, 500), (175.0, 500), (185.0, 500)]);
        assert!(!on(2).settled(&r));
    }

    #[test]
    fn a_drifting_p50_has_not_settled_even_with_a_steady_throughput() {
        let r = rounds(&[(200.0, 400), (200.0, 420), (200.0, 600), (200.0, 640)]);
        assert!(!on(2).settled(&r));
    }

    #[test]
    fn one_noisy_round_neither_ends_nor_prolongs_a_steady_warm_up() {
        // The noise of a polling recipe's median: a window's mean absorbs it.
        let r = rounds(&[
            (400.0, 6_195),
            (386.0, 7_923),
            (376.0, 8_055),
            (391.0, 8_159),
            (381.0, 4_855),
            (376.0, 7_519),
        ]);
        assert!(on(3).settled(&r));
    }

    #[test]
    fn too_few_rounds_or_none_granted_never_settle() {
        assert!(!on(2).settled(&rounds(&[(200.0, 500), (200.0, 500), (200.0, 500)])));
        assert!(!on(2).settled(&rounds(&[(0.0, 0); 4])));
    }

    #[test]
    fn a_warm_up_too_short_for_its_windows_is_refused() {
        let short = Steady {
            max: Duration::from_secs(5),
            ..Steady::default()
        };
        assert_eq!(short.validate().unwrap_err().0, "steady.max");
        assert!(Steady::default().validate().is_ok(), "off is always valid");
        let loose = Steady {
            p50_tolerance: 1.5,
            ..on(2)
        };
        assert_eq!(loose.validate().unwrap_err().0, "steady.p50_tolerance");
    }
}
