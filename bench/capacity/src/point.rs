//! One grid point's search as it is recorded: every step run, the results at each rate, why it
//! stopped early, and the sizing table's row that sums it up.
//!
//! Pure bookkeeping over finished steps (the engine runs them), so the row's verdict and note
//! are decided in one place, next to the search that chose the rates.

use crate::{Generator, Search};
use lockbench_results::BackendResult;
use lockbench_results::capacity::{SizingRow, SizingVerdict, SweepStep};
use std::collections::BTreeMap;

/// How many generator-bound failed steps a grid point may run again.
pub const RETRIES_PER_POINT: u32 = 2;

/// One grid point's search: every step run, the results at each sustained rate, and why it
/// stopped early (an error, Ctrl-C).
pub struct PointSearch {
    /// The search (its knee).
    pub search: Search,
    /// Every step, in order (a step run again is kept, the later one counts).
    pub steps: Vec<SweepStep>,
    /// The full result at each rate the search recorded (`None`: the closed-loop probe).
    pub knee_results: Vec<(Option<f64>, BackendResult)>,
    /// Why the search stopped before its end, if it did.
    pub stopped: Option<Stopped>,
}

/// Why a grid point's search stopped before its end.
pub enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A step could not run: the step's reasons.
    Error(String),
}

/// What a grid point's row is about: its backend, its `--vary` values, its clients and keys.
pub struct PointOf<'a> {
    /// The backend's name.
    pub backend: &'a str,
    /// The grid point's values.
    pub point: BTreeMap<String, String>,
    /// Clients at this point.
    pub clients: u32,
    /// Keys at this point.
    pub keys: u32,
}

/// Whether a step that was not sustained is worth running once more: it failed while
/// lockbench was the limit (which says little about the backend: the machine may be busy with
/// something else), retries are left, and it ran (an error is not retried).
pub fn worth_again(rate: Option<f64>, step: &SweepStep, errored: bool, retries: u32) -> bool {
    rate.is_some() && !step.sustained && step.generator_bound && retries > 0 && !errored
}

/// How lockbench fared in `step`: `generator_bound` says whether that could explain the
/// step's outcome; the notes, whether lockbench was at its limit at all (a failed step's
/// `generator_bound` is narrower than its resources' flag, see `saturation::explains_miss`).
pub fn generator(step: &SweepStep) -> Generator {
    if step.generator_bound {
        Generator::Explains
    } else if !step.generator_notes.is_empty() {
        Generator::Limited
    } else {
        Generator::KeptUp
    }
}

impl PointSearch {
    /// A search with nothing run yet.
    pub fn new(search: Search) -> PointSearch {
        PointSearch {
            search,
            steps: Vec::new(),
            knee_results: Vec::new(),
            stopped: None,
        }
    }

    /// Records a finished step in the search: the probe's throughput, or an open-loop step's
    /// outcome and how lockbench fared in it.
    pub fn record(&mut self, rate: Option<f64>, step: &SweepStep) {
        match rate {
            None => self.search.record_probe(step.achieved_per_s),
            Some(r) => self.search.record(r, step.sustained, generator(step)),
        }
    }

    /// The last step at `rate` (an earlier one may have been run again).
    fn at(&self, rate: Option<f64>) -> Option<&SweepStep> {
        rate.and_then(|r| self.steps.iter().rev().find(|s| s.offered_per_s == Some(r)))
    }

    /// The sizing table's row for this grid point: the knee, its verdict and why.
    pub fn sizing_row(&self, of: PointOf<'_>) -> SizingRow {
        let knee = self.search.knee();
        let verdict = match &self.stopped {
            Some(Stopped::Interrupted) => SizingVerdict::Interrupted,
            Some(Stopped::Error(_)) => SizingVerdict::Error,
            None => knee.verdict,
        };
        SizingRow {
            backend: of.backend.into(),
            point: of.point,
            clients: of.clients,
            keys: of.keys,
            verdict,
            max_rate_per_s: knee.rate,
            first_failed_rate_per_s: knee.failed,
            knee: self.at(knee.rate).cloned(),
            note: self.note(verdict),
        }
    }

    /// Why the row says what it says.
    fn note(&self, verdict: SizingVerdict) -> String {
        let knee = self.search.knee();
        match (&self.stopped, verdict) {
            (Some(Stopped::Interrupted), _) => "interrupted".into(),
            (Some(Stopped::Error(e)), _) => e.clone(),
            (None, SizingVerdict::GeneratorBound) => {
                // The step that bounds the knee: the failure above it, else the top one.
                let bound = self.at(knee.failed).or_else(|| {
                    self.steps
                        .iter()
                        .filter(|s| s.offered_per_s.is_some())
                        .max_by(|a, b| {
                            a.offered_per_s
                                .partial_cmp(&b.offered_per_s)
                                .expect("rates are finite")
                        })
                });
                let knee_step = if self.search.machine_limited() && knee.rate.is_some() {
                    " (and at a sustained rate below it)"
                } else {
                    ""
                };
                format!(
                    "lockbench was the limit, so the rate is a lower bound: at {:.0}/s{knee_step} {}",
                    bound.and_then(|s| s.offered_per_s).unwrap_or(0.0),
                    bound
                        .map(|s| s.generator_notes.join("; "))
                        .unwrap_or_default()
                )
            }
            (None, SizingVerdict::NotReached) => {
                "every rate tried was sustained: a lower bound (raise --max-steps or the clients)"
                    .into()
            }
            (None, SizingVerdict::None) => "not even the lowest rate tried was sustained".into(),
            _ => self
                .at(knee.failed)
                .map(|s| format!("above it: {}", s.reasons.join("; ")))
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of() -> PointOf<'static> {
        PointOf {
            backend: "redis-setnx",
            point: BTreeMap::new(),
            clients: 8,
            keys: 1,
        }
    }

    #[test]
    fn a_stopped_search_says_why_in_its_row() {
        let mut found = PointSearch::new(Search::listed(vec![10.0, 20.0], 4));
        found.stopped = Some(Stopped::Error("cannot connect".into()));
        let row = found.sizing_row(of());
        assert_eq!(row.verdict, SizingVerdict::Error);
        assert_eq!(row.note, "cannot connect");
        assert_eq!(
            (row.backend.as_str(), row.clients, row.keys),
            ("redis-setnx", 8, 1)
        );
        found.stopped = Some(Stopped::Interrupted);
        let row = found.sizing_row(of());
        assert_eq!(
            (row.verdict, row.note.as_str()),
            (SizingVerdict::Interrupted, "interrupted")
        );
    }

    #[test]
    fn only_a_generator_bound_failure_at_a_rate_runs_again() {
        let bound = SweepStep {
            sustained: false,
            generator_bound: true,
            ..SweepStep::default()
        };
        assert!(worth_again(Some(10.0), &bound, false, 1));
        assert!(
            !worth_again(None, &bound, false, 1),
            "the probe is not retried"
        );
        assert!(
            !worth_again(Some(10.0), &bound, true, 1),
            "an error is not retried"
        );
        assert!(
            !worth_again(Some(10.0), &bound, false, 0),
            "no retries left"
        );
        let backend_bound = SweepStep {
            generator_bound: false,
            ..bound.clone()
        };
        assert!(!worth_again(Some(10.0), &backend_bound, false, 1));
    }

    /// Every step had lockbench at its limit (timers 300 ms late), and the failed step's p99
    /// exceeded the objective by more than that lag: its `generator_bound` is false, its notes
    /// are not. The row said `ok` before.
    #[test]
    fn a_point_with_lockbench_at_its_limit_in_every_step_is_generator_bound() {
        let lag =
            "lockbench's timers fired 300.0 ms late (p99): the pacer could not keep its schedule";
        let step = |rate: Option<f64>, sustained: bool, generator_bound: bool| SweepStep {
            offered_per_s: rate,
            achieved_per_s: rate.unwrap_or(40.0),
            sustained,
            generator_bound,
            generator_notes: vec![lag.into()],
            reasons: if sustained {
                Vec::new()
            } else {
                vec!["p99 900.0 ms > objective 300.0 ms".into()]
            },
            ..SweepStep::default()
        };
        let mut found = PointSearch::new(Search::listed(vec![20.0, 40.0], 4));
        for (rate, sustained, bound) in [(20.0, true, true), (40.0, false, false)] {
            let s = step(Some(rate), sustained, bound);
            found.record(Some(rate), &s);
            found.steps.push(s);
        }
        let row = found.sizing_row(of());
        assert_eq!(row.verdict, SizingVerdict::GeneratorBound, "{}", row.note);
        assert_eq!(row.max_rate_per_s, Some(20.0));
        assert!(
            row.note
                .contains("at 40/s (and at a sustained rate below it)")
                && row.note.contains("300.0 ms late"),
            "{}",
            row.note
        );
        // The same steps with lockbench keeping up at the sustained one: the backend's knee.
        let mut found = PointSearch::new(Search::listed(vec![20.0, 40.0], 4));
        let kept_up = SweepStep {
            generator_bound: false,
            generator_notes: Vec::new(),
            ..step(Some(20.0), true, false)
        };
        found.record(Some(20.0), &kept_up);
        found.record(Some(40.0), &step(Some(40.0), false, false));
        assert_eq!(found.sizing_row(of()).verdict, SizingVerdict::Ok);
    }
}
