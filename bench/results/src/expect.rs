//! A scenario's expectations judged against its results, and the exit code that follows.
//!
//! Each expectation (`lockbench_core::expect`) ends `met`, `failed` or `unknown`, with the
//! figure it was judged on, and `results.json` keeps them all (`expectations`). A `violated`
//! expectation by kind is judged on the violations the checkers counted by kind
//! (`safety.violation_kinds`): a kind nobody expected fails it, even next to expected ones. The exit code
//! is derived from them alone, as Jepsen derives its own from `:valid?`: 1 when one failed
//! (an invalid verdict nobody expected is a failed implicit `safe`), else 2 when one could not
//! be judged (the backend did not run, its verdict is `unknown`, or the fault meant to break
//! it was never applied), else 0. An expectation about a result is only as good as the result:
//! an `unknown` verdict (a checker failed, nothing was granted, the instrument disagreed with
//! itself) makes every safety expectation on it `unknown`, never met.

use crate::model::{BackendResult, ExpectationResult};
use crate::{Status, Validity};
use lockbench_analysis::availability::Window;
use lockbench_core::expect::{Expect, Expectations, Kinds, WindowName};
use lockbench_core::{FaultCell, FindingKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How one expectation ended, ordered so that the worst is `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The results show what was expected.
    Met,
    /// They could not say (no result, no verdict, the fault was not applied).
    Unknown,
    /// They show the opposite.
    Failed,
}

impl Outcome {
    /// The name `results.json` uses.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::Unknown => "unknown",
            Outcome::Failed => "failed",
        }
    }
}

/// Judges every expectation of `expect` on `results` (the run's backends, in order).
pub fn evaluate(expect: &Expectations, results: &[BackendResult]) -> Vec<ExpectationResult> {
    let ran: Vec<String> = results.iter().map(|r| r.backend.clone()).collect();
    let resolved = expect.resolve(&ran);
    resolved
        .checks
        .iter()
        .map(|(backend, e)| {
            let r = results
                .iter()
                .find(|r| &r.backend == backend)
                .expect("resolved from these results");
            let (outcome, measured) = judge(e, r);
            let unexpected_kinds = match outcome {
                Outcome::Failed => unexpected(e, r),
                Outcome::Met | Outcome::Unknown => Vec::new(),
            };
            ExpectationResult {
                backend: backend.clone(),
                expect: e.name().to_string(),
                implicit: matches!(e, Expect::Safe { implicit: true }),
                outcome,
                measured,
                unexpected_kinds,
            }
        })
        .collect()
}

fn judge(e: &Expect, r: &BackendResult) -> (Outcome, String) {
    if r.status != Status::Ok {
        let why = r.error.as_deref().unwrap_or("");
        let status = r.status.name();
        return (Outcome::Unknown, format!("did not run: {status} {why}"));
    }
    if let Expect::MinThroughput(min) = e {
        let samples: Vec<f64> = if r.repetitions.is_empty() {
            vec![r.throughput_per_s]
        } else {
            r.repetitions.iter().map(|x| x.throughput_per_s).collect()
        };
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let outcome = if mean >= *min {
            Outcome::Met
        } else {
            Outcome::Failed
        };
        return (outcome, format!("{mean:.1} acq/s (at least {min})"));
    }
    let verdicts: Vec<Validity> = if r.repetitions.is_empty() {
        vec![r.safety.verdict]
    } else {
        r.repetitions.iter().map(|x| x.verdict).collect()
    };
    if verdicts.contains(&Validity::Unknown) {
        return (
            Outcome::Unknown,
            format!("no safety verdict: {}", r.safety.failed_checkers.join("; ")),
        );
    }
    let s = &r.safety;
    let kinds = || s.violated_kinds().join(", ");
    let nothing_applied = !r.fault_windows.is_empty() && r.fault_windows.iter().all(|w| !w.applied);
    let not_applied = || {
        (
            Outcome::Unknown,
            "no fault was applied, so nothing could break it".to_string(),
        )
    };
    let accepted = s.stale_writes_accepted + s.writes_after_lock_lost_accepted;
    let rejected =
        s.stale_writes_rejected + (s.writes_after_lock_lost - s.writes_after_lock_lost_accepted);
    match e {
        Expect::Safe { .. } => match verdicts.iter().find(|v| **v == Validity::Invalid) {
            // Safe under faults that never came is not shown.
            None if nothing_applied => (
                Outcome::Unknown,
                "valid, but no fault was applied, so this says nothing about the faults".into(),
            ),
            None => (Outcome::Met, "valid".into()),
            Some(_) => (Outcome::Failed, format!("invalid: {}", kinds())),
        },
        Expect::Violated(rule) => match verdicts.iter().find(|v| **v != Validity::Invalid) {
            None => match rule.as_ref().and_then(|k| by_kind(k, r)) {
                None => (Outcome::Met, format!("invalid: {}", kinds())),
                Some(wrong) => (Outcome::Failed, format!("invalid: {}; {wrong}", kinds())),
            },
            Some(_) if nothing_applied => not_applied(),
            Some(_) => (
                Outcome::Failed,
                "valid: no violation found (are the checkers alive?)".into(),
            ),
        },
        Expect::Fenced => {
            let figures =
                format!("{rejected} stale or lost-lock writes rejected, {accepted} accepted");
            match (accepted, rejected) {
                (0, 0) if nothing_applied => not_applied(),
                (0, 0) => (
                    Outcome::Failed,
                    format!("{figures}: fencing was never put to the test"),
                ),
                (0, _) => (Outcome::Met, figures),
                _ => (Outcome::Failed, figures),
            }
        }
        Expect::Damaged => {
            let figures = format!("{accepted} stale or lost-lock writes accepted");
            match accepted {
                0 if nothing_applied => not_applied(),
                0 => (Outcome::Failed, figures),
                _ => (Outcome::Met, figures),
            }
        }
        Expect::MinThroughput(_) => unreachable!("judged above"),
        Expect::SafeIn(name) => match window(r, name) {
            None => (
                Outcome::Unknown,
                format!("no window {name}: the run had {}", windows_seen(r)),
            ),
            Some(w) if !w.applied => (
                Outcome::Unknown,
                format!("{name} was not applied: {}", w.note),
            ),
            Some(w) => {
                let length = w.end_s - w.start_s;
                let during = format!("{name} ({length:.1} s from {:.1} s)", w.start_s);
                let kinds: Vec<String> = violations_in(w).map(|(k, n)| k.counted(n)).collect();
                if kinds.is_empty() {
                    (Outcome::Met, format!("no violation in {during}"))
                } else {
                    (Outcome::Failed, format!("{} in {during}", kinds.join(", ")))
                }
            }
        },
    }
}

/// The window `name` of `r`: the n-th of those its scorecard cell covers.
fn window<'a>(r: &'a BackendResult, name: &WindowName) -> Option<&'a Window> {
    r.fault_windows
        .iter()
        .filter(|w| FaultCell::of(w.fault, &w.targets) == name.cell)
        .nth(name.n - 1)
}

/// `pause-client#1, pause-client#2`: the windows `r` had, as `safe_in` names them.
fn windows_seen(r: &BackendResult) -> String {
    let mut seen: Vec<(FaultCell, usize)> = Vec::new();
    for w in &r.fault_windows {
        let cell = FaultCell::of(w.fault, &w.targets);
        let n = seen.iter().filter(|(c, _)| *c == cell).count() + 1;
        seen.push((cell, n));
    }
    if seen.is_empty() {
        return "no fault window".into();
    }
    let names: Vec<String> = seen.iter().map(|(c, n)| format!("{c}#{n}")).collect();
    names.join(", ")
}

/// The violations charged to `w`, by kind.
fn violations_in(w: &Window) -> impl Iterator<Item = (FindingKind, u64)> + '_ {
    w.violations
        .iter()
        .filter(|(_, n)| **n > 0)
        .filter_map(|(k, n)| FindingKind::parse(k).ok().map(|k| (k, *n)))
}

/// The violation counts by kind of each repetition of `r` (of `r` itself when it ran once).
fn seen_kinds(r: &BackendResult) -> Vec<&BTreeMap<String, u64>> {
    if r.repetitions.is_empty() {
        vec![&r.safety.violation_kinds]
    } else {
        r.repetitions.iter().map(|x| &x.violation_kinds).collect()
    }
}

/// The kinds `r` showed that `e` did not allow: every kind for `safe`, those outside the list
/// for `violated` by kind, those charged to the window for `safe_in`, none for the others (a
/// bare `violated` list allows any kind).
fn unexpected(e: &Expect, r: &BackendResult) -> Vec<FindingKind> {
    if let Expect::SafeIn(name) = e {
        let charged = window(r, name).into_iter().flat_map(violations_in);
        return charged.map(|(k, _)| k).collect();
    }
    let allowed = |k: FindingKind| match e {
        Expect::Safe { .. } => false,
        Expect::Violated(Some(kinds)) => kinds.allows(k),
        _ => true,
    };
    let mut kinds = BTreeSet::new();
    for seen in seen_kinds(r) {
        let found = seen.iter().filter(|(_, n)| **n > 0);
        kinds.extend(found.filter_map(|(k, _)| FindingKind::parse(k).ok()));
    }
    kinds.into_iter().filter(|k| !allowed(*k)).collect()
}

/// What is wrong with the kinds of violation `r` showed against `expected`, or `None` when
/// they are what was expected (judged on every repetition: each must show every plain kind,
/// at least one listed kind, and no other).
fn by_kind(expected: &Kinds, r: &BackendResult) -> Option<String> {
    let seen = seen_kinds(r);
    let listed = |name: &str| FindingKind::parse(name).is_ok_and(|k| expected.allows(k));
    let mut unexpected = BTreeSet::new();
    let (mut missing, mut none_listed) = (BTreeSet::new(), false);
    for kinds in seen {
        let found = kinds
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, _)| k.as_str());
        unexpected.extend(found.clone().filter(|k| !listed(k)));
        none_listed |= !found.clone().any(listed);
        let absent = expected
            .must
            .iter()
            .filter(|k| !kinds.contains_key(k.name()));
        missing.extend(absent.map(|k| k.name()));
    }
    let wanted = expected.describe();
    let join = |s: BTreeSet<&str>| s.into_iter().collect::<Vec<_>>().join(", ");
    if !unexpected.is_empty() {
        Some(format!(
            "not expected: {} (expected: {wanted})",
            join(unexpected)
        ))
    } else if !missing.is_empty() {
        Some(format!(
            "expected but not seen: {} (expected: {wanted})",
            join(missing)
        ))
    } else if none_listed {
        Some(format!("none of the expected kinds (expected: {wanted})"))
    } else {
        None
    }
}

/// The worst outcome of `results` (`None` when there are none).
pub fn worst(results: &[ExpectationResult]) -> Option<Outcome> {
    results.iter().map(|r| r.outcome).max()
}

/// The line printed for one expectation: `EXPECTATION MET: zk-fair fenced: ...`.
pub fn line(r: &ExpectationResult) -> String {
    let label = if r.implicit {
        format!("{} (implicit)", r.expect)
    } else {
        r.expect.clone()
    };
    format!(
        "EXPECTATION {}: {} {label}: {}",
        r.outcome.name().to_uppercase(),
        r.backend,
        r.measured
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Repetition;
    use lockbench_core::{FaultKind, Scenario};

    /// A scenario of redis-setnx with `expect` as its `[expect]` table.
    pub(crate) fn scenario(expect: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nbackends = [\"redis-setnx\"]\n[workload]\nclients = 2\nkeys = 1\n\
             [expect]\n{expect}\n"
        );
        Scenario::load("t", &text, &[]).unwrap()
    }

    /// An invalid result of `backend` whose checkers found `kinds`.
    pub(crate) fn invalid(backend: &str, kinds: &[(&str, u64)]) -> BackendResult {
        let workload = scenario("").workload;
        let mut r = BackendResult::failed(backend, &workload, String::new());
        (r.status, r.error) = (Status::Ok, None);
        r.safety.verdict = Validity::Invalid;
        r.safety.failed_checkers.clear();
        r.safety.violation_kinds = kinds.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        r.safety.mutex_violations = r.safety.violation_kinds.get("mutex").copied().unwrap_or(0);
        r.safety.foreign_releases = r
            .safety
            .violation_kinds
            .get("foreign_release")
            .copied()
            .unwrap_or(0);
        r
    }

    /// The outcome of the one expectation `expect` sets on `r`, and what it was judged on.
    fn judged(expect: &str, r: &BackendResult) -> (Outcome, String) {
        let e = evaluate(&scenario(expect).expect, std::slice::from_ref(r)).remove(0);
        (e.outcome, e.measured)
    }

    #[test]
    fn a_kind_nobody_expected_fails_even_next_to_an_expected_violation() {
        let pause = invalid("redis-setnx", &[("mutex", 2)]);
        let plain_del = invalid("redis-setnx", &[("mutex", 2), ("foreign_release", 2)]);
        let by_kind = "violated = { all = [\"mutex\"] }";
        assert_eq!(judged(by_kind, &pause).0, Outcome::Met);
        let (outcome, measured) = judged(by_kind, &plain_del);
        assert_eq!(outcome, Outcome::Failed);
        assert!(
            measured.contains("not expected: foreign_release"),
            "{measured}"
        );
        assert!(
            measured.contains("2 releases of another client's lock"),
            "{measured}"
        );
        // A bare list keeps its old meaning: any violation meets it.
        assert_eq!(judged("violated = [\"all\"]", &plain_del).0, Outcome::Met);
        // A plain kind must appear; a `?` kind may; at least one listed kind must.
        let must = "violated = { all = [\"mutex\", \"token_reuse\"] }";
        let (outcome, measured) = judged(must, &pause);
        assert_eq!(outcome, Outcome::Failed);
        assert!(
            measured.contains("expected but not seen: token_reuse"),
            "{measured}"
        );
        let may = "violated = { all = [\"mutex\", \"token_reuse?\"] }";
        assert_eq!(judged(may, &pause).0, Outcome::Met);
        let other = invalid("redis-setnx", &[]);
        let (outcome, measured) = judged("violated = { all = [\"token_reuse?\"] }", &other);
        assert_eq!(outcome, Outcome::Failed);
        assert!(
            measured.contains("none of the expected kinds"),
            "{measured}"
        );
        // Every repetition is judged: one that showed an unexpected kind fails it.
        let mut repeated = pause;
        repeated.repetitions = vec![
            Repetition::of(&repeated),
            Repetition::of(&invalid("redis-setnx", &[("foreign_release", 1)])),
        ];
        assert_eq!(judged(may, &repeated).0, Outcome::Failed);
    }

    /// A window of `fault` on `targets` from `start_s` for `length_s`, with `violations`.
    fn window(
        fault: FaultKind,
        targets: &str,
        start_s: f64,
        length_s: f64,
        violations: &[(&str, u64)],
    ) -> Window {
        Window {
            fault,
            targets: vec![targets.into()],
            applied: true,
            note: String::new(),
            start_s,
            end_s: start_s + length_s,
            before: Default::default(),
            during: Default::default(),
            after: Default::default(),
            recovery_ms: None,
            violations: violations
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
            fenced: Default::default(),
            end_note: Default::default(),
        }
    }

    #[test]
    fn safe_in_judges_one_window_of_a_cell_by_its_place() {
        let mut r = invalid("redis-setnx", &[("mutex", 1)]);
        r.fault_windows = vec![
            window(FaultKind::Pause, "client1", 1.0, 0.8, &[]),
            window(FaultKind::Partition, "redis", 2.0, 1.0, &[]),
            window(FaultKind::Pause, "client2", 3.0, 5.0, &[("mutex", 1)]),
        ];
        let short = "violated = { all = [\"mutex\"] }\nsafe_in = { all = \"pause-client#1\" }";
        let e = evaluate(&scenario(short).expect, std::slice::from_ref(&r));
        let safe_in = e.iter().find(|e| e.expect == "safe_in").unwrap();
        assert_eq!(safe_in.outcome, Outcome::Met, "{safe_in:?}");
        assert_eq!(
            safe_in.measured,
            "no violation in pause-client#1 (0.8 s from 1.0 s)"
        );
        let long = short.replace("#1", "#2");
        let e = evaluate(&scenario(&long).expect, std::slice::from_ref(&r));
        let safe_in = e.iter().find(|e| e.expect == "safe_in").unwrap();
        assert_eq!(safe_in.outcome, Outcome::Failed);
        assert_eq!(
            safe_in.measured,
            "1 overlap in pause-client#2 (5.0 s from 3.0 s)"
        );
        assert_eq!(safe_in.unexpected_kinds, vec![FindingKind::Mutex]);
        // A window the run did not have, or one not applied, cannot be judged.
        let safe_in = |text: &str| {
            let e = evaluate(&scenario(text).expect, std::slice::from_ref(&r));
            let e = e.into_iter().find(|e| e.expect == "safe_in").unwrap();
            (e.outcome, e.measured)
        };
        let (outcome, measured) = safe_in("safe_in = { all = \"pause-client#3\" }");
        assert_eq!(outcome, Outcome::Unknown);
        assert!(
            measured.contains("pause-client#1, partition#1, pause-client#2"),
            "{measured}"
        );
        r.fault_windows[0].applied = false;
        let safe_in = |text: &str| {
            let e = evaluate(&scenario(text).expect, std::slice::from_ref(&r));
            e.into_iter()
                .find(|e| e.expect == "safe_in")
                .unwrap()
                .outcome
        };
        let outcome = safe_in("safe_in = { all = \"pause-client#1\" }");
        assert_eq!(outcome, Outcome::Unknown);
    }
}
