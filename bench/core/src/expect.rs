//! Expectations: what a scenario promises about its own results (`[expect]`), so a run can pass
//! or fail a CI job on its own.
//!
//! A run that prints `FINDING:` lines and exits 0 cannot gate anything, and a run that shows no
//! violation at all proves nothing unless something was *meant* to show one: a deliberately
//! broken recipe must be caught, or the checkers may be dead. So a scenario names, per backend
//! (or `"all"` of the run's backends), what its results must show:
//!
//! ```toml
//! [expect]
//! safe = ["all"]                      # safety verdict `valid`
//! violated = ["redis-broken-nonx"]    # verdict `invalid`: the proof the checkers are alive
//! fenced = ["zk-fair"]                # stale / lost-lock writes happened and all were rejected
//! damaged = ["redlock"]               # a stale or lost-lock write was accepted
//! min_throughput = { all = 10, redis-setnx = 1000 }   # measured acquisitions/s, at least
//! ```
//!
//! A backend the run has but `safe` and `violated` do not name is expected to be safe all the
//! same (Jepsen's rule: an invalid result fails the run); `violated` is how a scenario says an
//! invalid verdict is the point. Names are checked here (an unknown backend or a contradiction
//! names its field); a name that is valid but not in this run's `backends` (after `--set
//! backends=...`) is not checked, and the run says so. The results side (what each
//! expectation measured, met / failed / unknown, and the exit code) is
//! `lockbench_report::expect`.

use crate::election::ElectionKind;
use crate::ids::BackendKind;
use crate::scenario::{ScenarioError, bad};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// The name that stands for every backend (or election recipe) of the run.
pub const ALL: &str = "all";

/// The `[expect]` table of a scenario. Every field may be left out (`#[serde(default)]` on the
/// struct: an empty list or map).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Expectations {
    /// Backends whose safety verdict must be `valid`.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub safe: Vec<String>,
    /// Backends whose safety verdict must be `invalid` (a broken recipe, a fault that must break
    /// it): the proof that the checkers are alive.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub violated: Vec<String>,
    /// Backends whose fencing must be seen working: at least one stale write or write after the
    /// lock was lost happened, and the resource rejected every one.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub fenced: Vec<String>,
    /// Backends that must show damage: at least one stale write or write after the lock was
    /// lost that the resource accepted.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub damaged: Vec<String>,
    /// Lowest acceptable measured acquisitions/s, by backend (`all` for every backend without
    /// its own entry).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub min_throughput: BTreeMap<String, f64>,
}

/// `"zk-fair"` or `["zk-fair", "redlock"]`: `--set expect.safe=all` writes a string.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// One expectation on one backend.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// Safety verdict `valid`. `implicit` when the scenario did not name the backend in
    /// `safe` nor in `violated`.
    Safe {
        /// Not written in the scenario: the default for every backend.
        implicit: bool,
    },
    /// Safety verdict `invalid`.
    Violated,
    /// Stale / lost-lock writes happened and were all rejected.
    Fenced,
    /// A stale / lost-lock write was accepted.
    Damaged,
    /// At least this many acquisitions/s.
    MinThroughput(f64),
}

impl Expect {
    /// The name results use: the `[expect]` key.
    pub fn name(&self) -> &'static str {
        match self {
            Expect::Safe { .. } => "safe",
            Expect::Violated => "violated",
            Expect::Fenced => "fenced",
            Expect::Damaged => "damaged",
            Expect::MinThroughput(_) => "min_throughput",
        }
    }
}

/// The expectations that apply to one run, resolved against the backends it ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    /// `(backend, expectation)`, backend by backend in the run's order.
    pub checks: Vec<(String, Expect)>,
    /// `(field, backend)` of entries naming a backend this run does not have.
    pub not_in_run: Vec<(String, String)>,
}

impl Expectations {
    /// `true` when the scenario states nothing (every backend is then expected to be safe).
    pub fn is_empty(&self) -> bool {
        self == &Expectations::default()
    }

    fn lists(&self) -> [(&'static str, &Vec<String>); 4] {
        [
            ("safe", &self.safe),
            ("violated", &self.violated),
            ("fenced", &self.fenced),
            ("damaged", &self.damaged),
        ]
    }

    /// Checks every name and value, naming the field (`expect.violated`, ...).
    pub fn validate(&self, run: &[String]) -> Result<(), ScenarioError> {
        let known = |name: &str| {
            name == ALL
                || BackendKind::parse(name).is_ok()
                || ElectionKind::ALL.iter().any(|e| e.name() == name)
        };
        let names = self
            .lists()
            .into_iter()
            .flat_map(|(field, v)| v.iter().map(move |n| (field, n.as_str())))
            .chain(
                self.min_throughput
                    .keys()
                    .map(|n| ("min_throughput", n.as_str())),
            );
        for (field, name) in names {
            if !known(name) {
                let e = BackendKind::parse(name).unwrap_err();
                return Err(bad(
                    &format!("expect.{field}"),
                    format!("{e}, or \"{ALL}\" (every backend of the run)"),
                ));
            }
        }
        for (name, min) in &self.min_throughput {
            if !(min.is_finite() && *min >= 0.0) {
                return Err(bad(
                    &format!("expect.min_throughput.{name}"),
                    "must be a number of acquisitions/s, at least 0",
                ));
            }
        }
        for (a, b) in [("safe", "violated"), ("fenced", "damaged")] {
            let (left, right) = (self.pick(a, run), self.pick(b, run));
            if let Some(both) = left.iter().find(|n| right.contains(n)) {
                return Err(bad(
                    &format!("expect.{b}"),
                    format!("`{both}` is also in expect.{a}: a backend cannot be both"),
                ));
            }
        }
        Ok(())
    }

    /// The backends of `run` that list `field` names (`all` = every one of them).
    fn pick(&self, field: &str, run: &[String]) -> Vec<String> {
        let list = self
            .lists()
            .into_iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
            .expect("a list field");
        if list.iter().any(|n| n == ALL) {
            run.to_vec()
        } else {
            run.iter().filter(|b| list.contains(b)).cloned().collect()
        }
    }

    /// Every check for a run of `run` (its backends or election recipes, in order): the listed
    /// ones, plus an implicit `safe` for each backend in neither `safe` nor `violated`.
    pub fn resolve(&self, run: &[String]) -> Resolved {
        let mut out = Resolved::default();
        let (safe, violated) = (self.pick("safe", run), self.pick("violated", run));
        let (fenced, damaged) = (self.pick("fenced", run), self.pick("damaged", run));
        for b in run {
            let mut add = |e: Expect| out.checks.push((b.clone(), e));
            if violated.contains(b) {
                add(Expect::Violated);
            } else {
                add(Expect::Safe {
                    implicit: !safe.contains(b),
                });
            }
            if fenced.contains(b) {
                add(Expect::Fenced);
            }
            if damaged.contains(b) {
                add(Expect::Damaged);
            }
            if let Some(min) = self
                .min_throughput
                .get(b)
                .or_else(|| self.min_throughput.get(ALL))
            {
                add(Expect::MinThroughput(*min));
            }
        }
        let named = self
            .lists()
            .into_iter()
            .flat_map(|(field, v)| v.iter().map(move |n| (field, n)))
            .chain(self.min_throughput.keys().map(|n| ("min_throughput", n)));
        for (field, name) in named {
            if name != ALL && !run.contains(name) {
                out.not_in_run
                    .push((format!("expect.{field}"), name.clone()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn parse(text: &str) -> Expectations {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn unlisted_backends_are_expected_safe_and_all_means_the_run() {
        let e = parse(
            "violated = \"redis-broken-nonx\"\nfenced = [\"zk-fair\", \"redlock\"]\n\
             min_throughput = { all = 10.0, zk-fair = 100.0 }",
        );
        let r = e.resolve(&run(&["redis-broken-nonx", "zk-fair"]));
        assert_eq!(
            r.checks,
            vec![
                ("redis-broken-nonx".into(), Expect::Violated),
                ("redis-broken-nonx".into(), Expect::MinThroughput(10.0)),
                ("zk-fair".into(), Expect::Safe { implicit: true }),
                ("zk-fair".into(), Expect::Fenced),
                ("zk-fair".into(), Expect::MinThroughput(100.0)),
            ]
        );
        assert_eq!(
            r.not_in_run,
            vec![("expect.fenced".to_string(), "redlock".to_string())]
        );
        let all = parse("safe = [\"all\"]").resolve(&run(&["zk-fair"]));
        assert_eq!(
            all.checks,
            vec![("zk-fair".into(), Expect::Safe { implicit: false })]
        );
    }

    #[test]
    fn a_bad_entry_names_its_field() {
        let r = run(&["zk-fair", "redlock"]);
        let err = parse("safe = [\"zk-fast\"]").validate(&r).unwrap_err();
        assert_eq!(err.field, "expect.safe");
        assert!(err.problem.contains("zk-fast"), "{err}");
        let err = parse("safe = [\"all\"]\nviolated = [\"redlock\"]")
            .validate(&r)
            .unwrap_err();
        assert_eq!(err.field, "expect.violated");
        assert!(err.problem.contains("redlock"), "{err}");
        let err = parse("min_throughput = { zk-fair = -1.0 }")
            .validate(&r)
            .unwrap_err();
        assert_eq!(err.field, "expect.min_throughput.zk-fair");
        assert!(toml::from_str::<Expectations>("safes = [\"all\"]").is_err());
        parse("violated = [\"zk-election\"]").validate(&r).unwrap();
        // A whole number reads as acquisitions/s too.
        let whole = parse("min_throughput = { all = 10 }");
        assert_eq!(whole.min_throughput.get("all"), Some(&10.0));
    }
}
