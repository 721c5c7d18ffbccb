//! The offered-rate search of one grid point, as a state machine the caller drives: ask
//! [`Search::next`] what to run, run it, [`Search::record`] how it went, repeat; then read the
//! [`Knee`]. Pure logic, so it is tested on synthetic steps.

use lockbench_results::capacity::SizingVerdict;
use std::time::Duration;

/// What "sustained" means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Objective {
    /// Highest acceptable p99 acquire latency, measured from the intended start.
    pub p99: Duration,
    /// Achieved must be at least `(1 - tolerance)` x offered.
    pub tolerance: f64,
    /// Highest acceptable fraction of failed or indeterminate acquires.
    pub max_error_rate: f64,
}

/// A step's figures, as the judge needs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepFigures {
    /// Offered acquisitions/s.
    pub offered: f64,
    /// Achieved acquisitions/s in the measured window.
    pub achieved: f64,
    /// Corrected p99 acquire latency, µs (`None`: nothing was acquired).
    pub p99_us: Option<u64>,
    /// Acquisitions in the measured window.
    pub acquisitions: u64,
    /// Failed and indeterminate ops.
    pub errors: u64,
}

impl Objective {
    /// Why a step was not sustained; empty when it was.
    pub fn judge(&self, s: &StepFigures) -> Vec<String> {
        let mut why = Vec::new();
        let floor = (1.0 - self.tolerance) * s.offered;
        if s.achieved < floor {
            why.push(format!(
                "achieved {:.0}/s < {:.0}% of offered {:.0}/s",
                s.achieved,
                (1.0 - self.tolerance) * 100.0,
                s.offered
            ));
        }
        let slo_us = self.p99.as_micros() as u64;
        match s.p99_us {
            None => why.push("no acquisition in the measured window".into()),
            Some(p99) if p99 > slo_us => why.push(format!(
                "p99 {:.1} ms > objective {:.1} ms",
                p99 as f64 / 1e3,
                slo_us as f64 / 1e3
            )),
            Some(_) => {}
        }
        let attempts = s.acquisitions + s.errors;
        if attempts > 0 && s.errors as f64 > self.max_error_rate * attempts as f64 {
            why.push(format!("{} errors in {attempts} attempts", s.errors));
        }
        why
    }
}

/// Which part of the search a step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Closed loop, to see what the clients can drive at all.
    Probe,
    /// Geometric steps up (or down) until a bracket is found.
    Ramp,
    /// Geometric midpoints of the bracket.
    Bisect,
    /// An explicitly listed rate.
    Listed,
}

impl Phase {
    /// Lower-case name, as stored in results.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Probe => "probe",
            Phase::Ramp => "ramp",
            Phase::Bisect => "bisect",
            Phase::Listed => "listed",
        }
    }
}

/// How lockbench itself fared in an open-loop step (from the step's resources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generator {
    /// It kept up: the step measured the backend.
    KeptUp,
    /// It was at its limit (CPU, or timers firing late), but that alone cannot explain the
    /// step's miss (the p99 exceeds the objective by more than the timers' lag, or the rate
    /// fell behind while only the timers were late).
    Limited,
    /// It was at its limit and that could explain the step's outcome (for a failed step: its
    /// failure).
    Explains,
}

/// The search's state.
#[derive(Clone, Debug)]
pub struct Search {
    listed: Option<Vec<f64>>,
    probed: Option<f64>,
    /// Highest sustained rate so far.
    sustained: Option<f64>,
    /// Lowest failed rate so far.
    failed: Option<f64>,
    /// (rate, sustained, how lockbench fared) of every open-loop step.
    history: Vec<(f64, bool, Generator)>,
    steps: u32,
    max_steps: u32,
    resolution: f64,
}

/// Each ramp step multiplies (or divides) the rate by this.
const GROWTH: f64 = 2.0;
/// The ramp starts at this fraction of the probe's closed-loop throughput.
const START_FRACTION: f64 = 0.5;
/// The ramp never goes above this multiple of the probe's throughput (the clients could not
/// drive more), nor below [`MIN_RATE`].
const CEILING: f64 = 4.0;
/// Lowest rate tried, acquisitions/s.
pub const MIN_RATE: f64 = 1.0;

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    /// `ok`, `generator-bound`, `not-reached` or `none` (see the `capacity` schema).
    pub verdict: SizingVerdict,
    /// Highest sustained rate.
    pub rate: Option<f64>,
    /// Lowest failed rate.
    pub failed: Option<f64>,
}

impl Search {
    /// The automatic search: probe, ramp, bisect until `failed / sustained <= 1 + resolution`
    /// or `max_steps` steps (probe included) have run.
    pub fn auto(resolution: f64, max_steps: u32) -> Search {
        Search {
            listed: None,
            probed: None,
            sustained: None,
            failed: None,
            history: Vec::new(),
            steps: 0,
            max_steps,
            resolution,
        }
    }

    /// Runs `rates` in ascending order until the first one that is not sustained.
    pub fn listed(mut rates: Vec<f64>, max_steps: u32) -> Search {
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        Search {
            listed: Some(rates),
            ..Search::auto(0.0, max_steps)
        }
    }

    /// The next step to run (phase and offered rate; `None` rate = closed loop), or `None`
    /// when the search is over.
    pub fn next(&self) -> Option<(Phase, Option<f64>)> {
        if self.steps >= self.max_steps {
            return None;
        }
        if let Some(rates) = &self.listed {
            if self.failed.is_some() {
                return None;
            }
            return rates
                .get(self.history.len())
                .map(|&r| (Phase::Listed, Some(r)));
        }
        let Some(probed) = self.probed else {
            return Some((Phase::Probe, None));
        };
        match (self.sustained, self.failed) {
            (None, None) => Some((Phase::Ramp, Some((probed * START_FRACTION).max(MIN_RATE)))),
            (Some(s), None) => {
                let r = s * GROWTH;
                (r <= probed.max(MIN_RATE) * CEILING).then_some((Phase::Ramp, Some(r)))
            }
            (None, Some(f)) => {
                let r = f / GROWTH;
                (f > MIN_RATE).then_some((Phase::Ramp, Some(r.max(MIN_RATE))))
            }
            (Some(s), Some(f)) => {
                (f / s > 1.0 + self.resolution).then_some((Phase::Bisect, Some((s * f).sqrt())))
            }
        }
    }

    /// Records the closed-loop probe's achieved rate.
    pub fn record_probe(&mut self, achieved: f64) {
        self.steps += 1;
        self.probed = Some(if achieved.is_finite() {
            achieved.max(0.0)
        } else {
            0.0
        });
    }

    /// Records an open-loop step at `rate`: whether it was sustained and how lockbench fared.
    pub fn record(&mut self, rate: f64, sustained: bool, generator: Generator) {
        self.steps += 1;
        self.history.push((rate, sustained, generator));
        if sustained {
            self.sustained = Some(self.sustained.map_or(rate, |s| s.max(rate)));
        } else {
            self.failed = Some(self.failed.map_or(rate, |f| f.min(rate)));
        }
    }

    /// How lockbench fared at `rate` (`None`: no step there).
    fn generator_at(&self, rate: Option<f64>) -> Option<Generator> {
        let r = rate?;
        self.history
            .iter()
            .rev()
            .find(|&&(x, _, _)| x == r)
            .map(|&(_, _, g)| g)
    }

    /// lockbench was at its limit at the failure above the knee and at a sustained step (the
    /// knee's or one below it), or, when nothing was sustained, in every step run. A sustained
    /// step offered less than the failure did, so lockbench lagging there is the machine's doing
    /// (other work, a starved CPU), not the offered load's: the failure above the knee is then no
    /// more the backend's than the machine's, even when the timers' lag alone does not cover it
    /// (a starved machine delays every wake-up of an acquire, not only its start).
    pub fn machine_limited(&self) -> bool {
        let limited = |g: Generator| g != Generator::KeptUp;
        if self.sustained.is_none() {
            return !self.history.is_empty() && self.history.iter().all(|&(_, _, g)| limited(g));
        }
        self.generator_at(self.failed).is_some_and(limited)
            && self.history.iter().any(|&(_, s, g)| s && limited(g))
    }

    /// The knee so far: the highest sustained rate, and whether it can be trusted.
    pub fn knee(&self) -> Knee {
        let top = self
            .history
            .iter()
            .map(|&(r, _, _)| r)
            .max_by(f64::total_cmp);
        // What bounds the knee is the failure above it (or, when nothing failed, the top
        // step): a sustained step is sustained whoever was busy. That failure is lockbench's
        // when lockbench could explain it, or when the machine kept lockbench at its limit
        // there and at a sustained step.
        let verdict = if self.history.is_empty() {
            SizingVerdict::None
        } else if self.failed.is_none() {
            match self.generator_at(top) {
                Some(Generator::KeptUp) | None => SizingVerdict::NotReached,
                Some(_) => SizingVerdict::GeneratorBound,
            }
        } else if self.generator_at(self.failed) == Some(Generator::Explains)
            || self.machine_limited()
        {
            SizingVerdict::GeneratorBound
        } else if self.sustained.is_none() {
            SizingVerdict::None
        } else {
            SizingVerdict::Ok
        };
        Knee {
            verdict,
            rate: self.sustained,
            failed: self.failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a search against a synthetic backend that sustains every rate up to `cap`.
    fn run(mut search: Search, cap: f64, probe: f64, gen_bound_above: f64) -> (Knee, Vec<f64>) {
        let mut rates = Vec::new();
        while let Some((phase, rate)) = search.next() {
            match rate {
                None => {
                    assert_eq!(phase, Phase::Probe);
                    search.record_probe(probe);
                }
                Some(r) => {
                    rates.push(r);
                    let generator = if r > gen_bound_above {
                        Generator::Explains
                    } else {
                        Generator::KeptUp
                    };
                    search.record(r, r <= cap, generator);
                }
            }
        }
        (search.knee(), rates)
    }

    #[test]
    fn finds_a_cap_within_the_resolution() {
        for cap in [3.0, 90.0, 1234.0, 50_000.0] {
            let (knee, rates) = run(Search::auto(0.05, 20), cap, cap * 1.1, f64::MAX);
            assert_eq!(knee.verdict, SizingVerdict::Ok, "cap {cap}: {rates:?}");
            let (s, f) = (knee.rate.unwrap(), knee.failed.unwrap());
            assert!(s <= cap && f > cap && f / s <= 1.05, "cap {cap}: {s} {f}");
            assert!(rates.len() <= 9, "cap {cap}: too many steps {rates:?}");
        }
    }

    #[test]
    fn ramps_down_when_the_start_already_fails() {
        let (knee, rates) = run(Search::auto(0.1, 20), 10.0, 1000.0, f64::MAX);
        assert_eq!(rates[0], 500.0);
        assert_eq!(knee.verdict, SizingVerdict::Ok);
        assert!(knee.rate.unwrap() <= 10.0 && knee.rate.unwrap() > 9.0 / 1.1);
    }

    #[test]
    fn nothing_sustained_is_none_and_everything_sustained_is_not_reached() {
        let (knee, _) = run(Search::auto(0.1, 20), 0.5, 100.0, f64::MAX);
        assert_eq!((knee.verdict, knee.rate), (SizingVerdict::None, None));
        let (knee, rates) = run(Search::auto(0.1, 20), f64::MAX, 100.0, f64::MAX);
        assert_eq!(knee.verdict, SizingVerdict::NotReached);
        assert_eq!(*rates.last().unwrap(), 400.0);
    }

    #[test]
    fn a_knee_next_to_a_saturated_generator_is_not_reported_as_capacity() {
        // The failing step above the knee had lockbench saturated.
        let (knee, _) = run(Search::auto(0.05, 20), 100.0, 110.0, 100.5);
        assert_eq!(knee.verdict, SizingVerdict::GeneratorBound);
        assert!(knee.rate.is_some());
        // Saturated only far above the bracket: the knee stands.
        let (knee, _) = run(Search::auto(0.05, 20), 100.0, 110.0, 150.0);
        assert_eq!(knee.verdict, SizingVerdict::Ok);
        // Saturated at the sustained steps but not at the failure above: it was sustained.
        let mut s = Search::auto(0.5, 20);
        s.record_probe(100.0);
        s.record(50.0, true, Generator::Explains);
        s.record(100.0, false, Generator::KeptUp);
        assert_eq!(s.knee().verdict, SizingVerdict::Ok);
        // Nothing failed and the top step was saturated: not the backend's ceiling.
        let (knee, _) = run(Search::auto(0.1, 20), f64::MAX, 100.0, 300.0);
        assert_eq!(knee.verdict, SizingVerdict::GeneratorBound);
    }

    /// Timers 70-500 ms late in every step (a machine at load 12-34): the failure above the
    /// knee missed the objective by more than the lag, so the lag alone does not explain it,
    /// yet lockbench lagged at the lower, sustained rates too: the machine's doing.
    #[test]
    fn a_knee_measured_with_lockbench_at_its_limit_throughout_is_not_ok() {
        let search = |steps: &[(f64, bool, Generator)]| {
            let mut s = Search::auto(0.5, 20);
            s.record_probe(40.0);
            for &(r, sustained, g) in steps {
                s.record(r, sustained, g);
            }
            s
        };
        use Generator::{Explains, KeptUp, Limited};
        let starved = search(&[(20.0, true, Explains), (40.0, false, Limited)]);
        assert!(starved.machine_limited());
        assert_eq!(starved.knee().verdict, SizingVerdict::GeneratorBound);
        assert_eq!(
            starved.knee().rate,
            Some(20.0),
            "still the highest sustained"
        );
        // Lagging below the knee though not at it (measured: 15 ms at 35/s, 9.6 ms at the
        // knee's 36/s, 28 ms at the failure's 38/s, on a machine 100% busy with other work).
        let below = search(&[
            (10.0, true, Explains),
            (20.0, true, KeptUp),
            (40.0, false, Limited),
        ]);
        assert_eq!(below.knee().verdict, SizingVerdict::GeneratorBound);
        // lockbench kept up at every sustained step, or at the failure above the knee: the
        // knee is the backend's.
        for steps in [
            [(20.0, true, KeptUp), (40.0, false, Limited)],
            [(20.0, true, Explains), (40.0, false, KeptUp)],
        ] {
            assert_eq!(
                search(&steps).knee().verdict,
                SizingVerdict::Ok,
                "{steps:?}"
            );
        }
        // Nothing sustained, lockbench at its limit in every step: not "none".
        let none = search(&[(20.0, false, Limited), (10.0, false, Limited)]);
        assert_eq!(none.knee().verdict, SizingVerdict::GeneratorBound);
        let none = search(&[(20.0, false, Limited), (10.0, false, KeptUp)]);
        assert_eq!(none.knee().verdict, SizingVerdict::None);
    }

    #[test]
    fn max_steps_bounds_the_search_and_listed_rates_stop_at_the_first_failure() {
        let (_, rates) = run(Search::auto(0.001, 5), 100.0, 110.0, f64::MAX);
        assert_eq!(rates.len(), 4);
        let (knee, rates) = run(
            Search::listed(vec![300.0, 100.0, 200.0, 50.0], 10),
            150.0,
            0.0,
            f64::MAX,
        );
        assert_eq!(rates, vec![50.0, 100.0, 200.0]);
        assert_eq!(
            (knee.verdict, knee.rate, knee.failed),
            (SizingVerdict::Ok, Some(100.0), Some(200.0))
        );
    }

    #[test]
    fn the_judge_names_each_reason() {
        let o = Objective {
            p99: Duration::from_millis(50),
            tolerance: 0.05,
            max_error_rate: 0.01,
        };
        let ok = StepFigures {
            offered: 100.0,
            achieved: 96.0,
            p99_us: Some(49_000),
            acquisitions: 150,
            errors: 1,
        };
        assert!(o.judge(&ok).is_empty());
        let slow = StepFigures {
            achieved: 90.0,
            p99_us: Some(80_000),
            errors: 5,
            ..ok
        };
        let why = o.judge(&slow);
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].contains("achieved 90/s") && why[1].contains("p99 80.0 ms"));
        assert_eq!(o.judge(&StepFigures { p99_us: None, ..ok }).len(), 1);
    }
}
