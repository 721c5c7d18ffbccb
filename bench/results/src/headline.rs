//! The run's headline: what a reader sees first, at the top of `report.html` and in the
//! terminal's last lines.
//!
//! Why it judges the expectations first: a chaos scenario is *meant* to break mutual
//! exclusion (a holder paused past its lock's life must lose the lock while it still believes
//! it holds it), so "safety violated by 6 of 6 backends" is the healthy outcome of
//! `chaos-quick`, and printed red it reads like a regression. The headline says instead whether
//! the run behaved as its scenario says (`met`, `failed`, `unknown`: the same judgement that
//! gives `lockbench run` its exit code), then splits the safety facts into the violations the
//! scenario expected and those it did not, so a healthy chaos run and a recipe that started
//! deleting other clients' locks no longer look alike.

use crate::expect::Outcome;
use crate::model::{BackendResult, ExpectationResult, RunResults};
use crate::{Status, Validity};
use lockbench_core::FindingKind;

/// The run judged as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every expectation was met.
    Met,
    /// At least one expectation failed (`lockbench run` exits 1).
    Failed,
    /// None failed, but at least one could not be judged (exit 2).
    Unknown,
    /// The run was cut short before its last backend: nothing is judged.
    Incomplete,
}

impl Verdict {
    /// The words the headline opens with.
    pub fn title(self) -> &'static str {
        match self {
            Verdict::Met => "EXPECTATIONS MET",
            Verdict::Failed => "EXPECTATIONS FAILED",
            Verdict::Unknown => "EXPECTATIONS UNKNOWN",
            Verdict::Incomplete => "INCOMPLETE",
        }
    }

    /// The CSS class and short name: `met`, `failed`, `unknown`, `incomplete`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Failed => "failed",
            Verdict::Unknown => "unknown",
            Verdict::Incomplete => "incomplete",
        }
    }
}

/// One backend's violations, as counted (`"2 overlaps"`, `"1 release of another client's lock"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violations {
    /// Recipe name.
    pub backend: String,
    /// The kinds, counted, in the finding table's order.
    pub kinds: Vec<String>,
}

/// The headline of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    /// The run against its expectations.
    pub verdict: Verdict,
    /// Expectations met, failed and unknown.
    pub met: usize,
    /// See [`Headline::met`].
    pub failed: usize,
    /// See [`Headline::met`].
    pub unknown: usize,
    /// Backends that ran to the end (the denominator of the safety line).
    pub backends: usize,
    /// Acquisitions granted in the measured windows of those backends.
    pub acquisitions: u64,
    /// Fault windows that were applied (a holder pause of the fencing workload counts), over
    /// every backend: with none, a run with no violation showed mutual exclusion under
    /// contention and nothing about faults.
    pub faults_applied: usize,
    /// Backends with a valid verdict.
    pub safe: Vec<String>,
    /// Backends with an invalid verdict.
    pub violated: Vec<String>,
    /// Violations the scenario expected (a `violated` expectation allows their kinds).
    pub expected: Vec<Violations>,
    /// Violations nobody expected: the kinds that failed an expectation.
    pub unexpected: Vec<Violations>,
    /// Backends without a safety verdict (a checker failed, nothing was granted) or that did
    /// not run.
    pub no_verdict: Vec<String>,
    /// The expectations that were not met, in the run's order.
    pub not_met: Vec<ExpectationResult>,
    /// Backends whose clients waited inside every acquire on purpose (`workload.slowdown`),
    /// with the delay in ms.
    pub slowed: Vec<(String, f64)>,
}

/// The headline of `run`.
pub fn of(run: &RunResults) -> Headline {
    let count = |o: Outcome| run.expectations.iter().filter(|e| e.outcome == o).count();
    let (met, failed, unknown) = (
        count(Outcome::Met),
        count(Outcome::Failed),
        count(Outcome::Unknown),
    );
    let verdict = if !run.complete {
        Verdict::Incomplete
    } else if failed > 0 {
        Verdict::Failed
    } else if unknown > 0 || run.expectations.is_empty() {
        Verdict::Unknown
    } else {
        Verdict::Met
    };
    let mut h = Headline {
        verdict,
        met,
        failed,
        unknown,
        backends: 0,
        acquisitions: 0,
        faults_applied: 0,
        safe: Vec::new(),
        violated: Vec::new(),
        expected: Vec::new(),
        unexpected: Vec::new(),
        no_verdict: Vec::new(),
        not_met: run
            .expectations
            .iter()
            .filter(|e| e.outcome != Outcome::Met)
            .cloned()
            .collect(),
        slowed: run
            .results
            .iter()
            .filter_map(|r| Some((r.backend.clone(), r.injected_slowdown_ms?)))
            .collect(),
    };
    for r in &run.results {
        if r.status != Status::Ok {
            h.no_verdict.push(r.backend.clone());
            continue;
        }
        h.backends += 1;
        h.acquisitions += r.acquisitions;
        h.faults_applied += r.fault_windows.iter().filter(|w| w.applied).count();
        h.faults_applied += usize::from(r.fencing.is_some());
        match r.safety.verdict {
            Validity::Valid => h.safe.push(r.backend.clone()),
            Validity::Unknown => h.no_verdict.push(r.backend.clone()),
            Validity::Invalid => {
                h.violated.push(r.backend.clone());
                split(r, &run.expectations, &mut h);
            }
        }
    }
    h
}

/// Files an invalid backend's kinds under expected and unexpected.
fn split(r: &BackendResult, expectations: &[ExpectationResult], h: &mut Headline) {
    let own = || expectations.iter().filter(|e| e.backend == r.backend);
    let unexpected: Vec<FindingKind> = own()
        .flat_map(|e| e.unexpected_kinds.iter().copied())
        .collect();
    // A failed `safe` expected no kind at all (files older than `unexpected_kinds` say only
    // that it failed).
    let safe_failed = own().any(|e| e.expect == "safe" && e.outcome == Outcome::Failed);
    let counted = |wanted: bool| -> Vec<String> {
        FindingKind::violations()
            .filter(|k| (safe_failed || unexpected.contains(k)) == wanted)
            .filter_map(|k| {
                let n = r.safety.count(k);
                (n > 0).then(|| k.counted(n))
            })
            .collect()
    };
    let (expected, not_expected) = (counted(false), counted(true));
    // A repetition may show a kind the merged counts do not (they are the first's); name it.
    let not_expected = if not_expected.is_empty() && !unexpected.is_empty() {
        unexpected.iter().map(|k| k.name().to_string()).collect()
    } else {
        not_expected
    };
    if !expected.is_empty() {
        h.expected.push(Violations {
            backend: r.backend.clone(),
            kinds: expected,
        });
    }
    if !not_expected.is_empty() {
        h.unexpected.push(Violations {
            backend: r.backend.clone(),
            kinds: not_expected,
        });
    }
}

impl Headline {
    /// The first line: `EXPECTATIONS MET (14 of 14)`.
    pub fn title_line(&self) -> String {
        format!("{} {}", self.verdict.title(), self.detail())
    }

    /// What follows the verdict's title: `(14 of 14)`, `(1 of 14 failed, 0 unknown)`.
    pub fn detail(&self) -> String {
        let total = self.met + self.failed + self.unknown;
        match self.verdict {
            Verdict::Met => format!("({} of {total})", self.met),
            Verdict::Failed => format!(
                "({} of {total} failed, {} unknown)",
                self.failed, self.unknown
            ),
            Verdict::Unknown if total == 0 => "(the run judged no expectation)".into(),
            Verdict::Unknown => format!("({} of {total} could not be judged)", self.unknown),
            Verdict::Incomplete => {
                "(the run was cut short; its expectations were not judged)".into()
            }
        }
    }

    /// `INJECTED SLOWDOWN: ...` when any backend ran with `workload.slowdown`.
    pub fn slowdown_line(&self) -> Option<String> {
        if self.slowed.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .slowed
            .iter()
            .map(|(backend, ms)| format!("{backend} {}", crate::model::slowdown_label(*ms)))
            .collect();
        Some(format!(
            "INJECTED SLOWDOWN: {} in every acquire, the lock held (workload.slowdown): these figures are \
             slowed on purpose",
            each.join(", ")
        ))
    }

    /// The safety line: how many backends kept mutual exclusion, and whether the violations
    /// were the expected ones, each backend with the kinds it showed (one backend may show an
    /// expected kind and an unexpected one). A run in which no fault was applied says what it
    /// showed, mutual exclusion under contention, and not "safe".
    pub fn safety_line(&self) -> String {
        let named = |v: &[Violations]| {
            v.iter()
                .map(|x| format!("{} ({})", x.backend, x.kinds.join(", ")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let violated = self.violated.len();
        let mut parts = Vec::new();
        if violated == 0 && self.faults_applied == 0 {
            parts.push(format!(
                "mutual exclusion held on {} of {} backends under contention ({} acquisitions); \
                 no fault was applied, so this says nothing about safety under faults \
                 (`lockbench run verdict` tests every backend under each fault)",
                self.safe.len(),
                self.backends,
                self.acquisitions
            ));
        } else if violated == 0 {
            parts.push(format!(
                "safe on {} of {} backends under {} applied fault{}",
                self.safe.len(),
                self.backends,
                self.faults_applied,
                if self.faults_applied == 1 { "" } else { "s" }
            ));
        } else {
            parts.push(format!(
                "safety violated by {violated} of {} backends",
                self.backends
            ));
            if !self.expected.is_empty() {
                let all = if self.unexpected.is_empty() {
                    "all "
                } else {
                    ""
                };
                parts.push(format!("{all}as expected: {}", named(&self.expected)));
            }
            if !self.unexpected.is_empty() {
                parts.push(format!("NOT expected: {}", named(&self.unexpected)));
            } else {
                parts.push("none unexpected".into());
            }
        }
        if !self.no_verdict.is_empty() {
            parts.push(format!("no verdict for {}", self.no_verdict.join(", ")));
        }
        parts.join("; ")
    }

    /// The terminal's last lines: the title, the safety line, then one line per unexpected
    /// violation and per expectation not met.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.title_line()];
        lines.extend(self.slowdown_line());
        lines.push(self.safety_line());
        for v in &self.unexpected {
            lines.push(format!("UNEXPECTED: {}: {}", v.backend, v.kinds.join(", ")));
        }
        for e in &self.not_met {
            lines.push(crate::expect::line(e));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expect::evaluate;
    use crate::expect::tests::{invalid, scenario};

    /// A complete run of `results`, judged on the `[expect]` table `expect`.
    fn judged(expect: &str, results: Vec<BackendResult>) -> RunResults {
        let expectations = evaluate(&scenario(expect).expect, &results);
        RunResults {
            schema_version: crate::SCHEMA_VERSION,
            scenario: "t".into(),
            seed: 1,
            started_at: String::new(),
            complete: true,
            cluster: "managed".into(),
            connections: Default::default(),
            environment: crate::environment::detect(Default::default()),
            results,
            scorecard: None,
            capacity: None,
            expectations,
        }
    }

    fn valid(backend: &str) -> BackendResult {
        let mut r = invalid(backend, &[]);
        r.safety.verdict = Validity::Valid;
        r
    }

    /// A backend run with `workload.slowdown` is named right under the title.
    #[test]
    fn an_injected_slowdown_is_the_second_line() {
        let mut slowed = valid("etcd-lease");
        slowed.injected_slowdown_ms = Some(2.5);
        let h = of(&judged("", vec![valid("zk-fair"), slowed]));
        let lines = h.lines();
        assert_eq!(
            lines[1],
            "INJECTED SLOWDOWN: etcd-lease 2.5 ms in every acquire, the lock held (workload.slowdown): \
             these figures are slowed on purpose",
            "{lines:?}"
        );
        assert_eq!(
            of(&judged("", vec![valid("zk-fair")])).slowdown_line(),
            None
        );
    }

    #[test]
    fn a_chaos_run_whose_violations_were_all_expected_reads_met() {
        let run = judged(
            "violated = { all = [\"mutex\"] }",
            vec![
                invalid("zk-fair", &[("mutex", 3)]),
                invalid("redis-setnx", &[("mutex", 1)]),
            ],
        );
        let h = of(&run);
        assert_eq!(h.verdict, Verdict::Met);
        assert_eq!(h.title_line(), "EXPECTATIONS MET (2 of 2)");
        assert_eq!(
            h.safety_line(),
            "safety violated by 2 of 2 backends; all as expected: zk-fair (3 overlaps), \
             redis-setnx (1 overlap); none unexpected"
        );
        assert_eq!(h.lines().len(), 2, "{:?}", h.lines());
    }

    #[test]
    fn a_kind_nobody_expected_is_named_apart_from_the_expected_ones() {
        let run = judged(
            "violated = { all = [\"mutex\"] }",
            vec![
                invalid("zk-fair", &[("mutex", 3)]),
                invalid("redis-setnx", &[("mutex", 2), ("foreign_release", 2)]),
            ],
        );
        let h = of(&run);
        assert_eq!(h.verdict, Verdict::Failed);
        assert_eq!(
            h.title_line(),
            "EXPECTATIONS FAILED (1 of 2 failed, 0 unknown)"
        );
        assert_eq!(h.expected.len(), 2, "both showed the expected overlaps");
        assert_eq!(h.expected[1].kinds, vec!["2 overlaps".to_string()]);
        assert_eq!(
            h.unexpected,
            vec![Violations {
                backend: "redis-setnx".into(),
                kinds: vec!["2 releases of another client's lock".into()],
            }]
        );
        let line = h.safety_line();
        assert!(
            line.contains("as expected: zk-fair (3 overlaps), redis-setnx (2 overlaps)"),
            "{line}"
        );
        assert!(!line.contains("all as expected"), "{line}");
        assert!(
            line.contains("NOT expected: redis-setnx (2 releases of another client's lock)"),
            "{line}"
        );
        let lines = h.lines();
        assert!(
            lines.contains(&"UNEXPECTED: redis-setnx: 2 releases of another client's lock".into()),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("EXPECTATION FAILED: redis-setnx violated")),
            "{lines:?}"
        );
    }

    #[test]
    fn a_violation_where_safety_was_expected_is_unexpected_in_every_kind() {
        let run = judged(
            "",
            vec![valid("zk-fair"), invalid("redis-setnx", &[("mutex", 1)])],
        );
        let h = of(&run);
        assert_eq!(h.verdict, Verdict::Failed);
        assert!(h.expected.is_empty());
        assert_eq!(h.unexpected[0].kinds, vec!["1 overlap".to_string()]);
        assert_eq!(h.safe, vec!["zk-fair".to_string()]);
        assert_eq!(
            h.safety_line(),
            "safety violated by 1 of 2 backends; NOT expected: redis-setnx (1 overlap)"
        );
    }

    #[test]
    fn no_verdict_and_a_cut_short_run_are_never_met() {
        let mut unknown = valid("redis-setnx");
        unknown.safety.verdict = Validity::Unknown;
        let h = of(&judged("", vec![with_fault(valid("zk-fair")), unknown]));
        assert_eq!(h.verdict, Verdict::Unknown);
        assert_eq!(
            h.safety_line(),
            "safe on 1 of 2 backends under 1 applied fault; no verdict for redis-setnx"
        );
        let mut cut = judged("", vec![valid("zk-fair")]);
        cut.complete = false;
        assert_eq!(of(&cut).verdict, Verdict::Incomplete);
        cut.complete = true;
        cut.expectations.clear();
        assert_eq!(of(&cut).verdict, Verdict::Unknown);
    }

    /// `r` with one applied pause window.
    fn with_fault(mut r: BackendResult) -> BackendResult {
        let span = lockbench_analysis::availability::Span::default();
        r.fault_windows
            .push(lockbench_analysis::availability::Window {
                fault: lockbench_core::FaultKind::Pause,
                targets: vec!["zk1".into()],
                applied: true,
                note: String::new(),
                end_note: String::new(),
                start_s: 1.0,
                end_s: 2.0,
                before: span.clone(),
                during: span.clone(),
                after: span,
                recovery_ms: None,
                violations: Default::default(),
                fenced: Default::default(),
            });
        r
    }

    #[test]
    fn a_run_without_an_applied_fault_does_not_say_safe() {
        let mut quiet = valid("zk-fair");
        quiet.acquisitions = 1200;
        let mut not_applied = with_fault(valid("redis-setnx"));
        not_applied.acquisitions = 800;
        not_applied.fault_windows[0].applied = false;
        let h = of(&judged("", vec![quiet.clone(), not_applied]));
        assert_eq!(h.faults_applied, 0);
        let line = h.safety_line();
        assert!(
            line.starts_with(
                "mutual exclusion held on 2 of 2 backends under contention (2000 acquisitions); \
                 no fault was applied"
            ),
            "{line}"
        );
        assert!(!line.contains("safe on"), "{line}");
        let h = of(&judged("", vec![with_fault(quiet)]));
        assert_eq!(
            h.safety_line(),
            "safe on 1 of 1 backends under 1 applied fault"
        );
    }

    /// `safe` under faults that were never applied cannot be met: the run showed nothing
    /// about them. Under an applied fault it is.
    #[test]
    fn safe_is_unknown_when_the_scenarios_faults_were_not_applied() {
        let mut not_applied = with_fault(valid("redis-setnx"));
        not_applied.fault_windows[0].applied = false;
        let run = judged("safe = [\"redis-setnx\"]", vec![not_applied]);
        let e = &run.expectations[0];
        assert_eq!(e.outcome, Outcome::Unknown, "{e:?}");
        assert!(e.measured.contains("no fault was applied"), "{e:?}");
        assert_eq!(of(&run).verdict, Verdict::Unknown);
        let run = judged(
            "safe = [\"redis-setnx\"]",
            vec![with_fault(valid("redis-setnx"))],
        );
        assert_eq!(run.expectations[0].outcome, Outcome::Met);
    }
}
