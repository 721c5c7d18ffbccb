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
//! # or, by kind: which violations each backend may show (a backend's own entry, else `all`)
//! violated = { all = ["mutex"], redlock = ["mutex", "write_after_lock_lost_accepted?"] }
//! fenced = ["zk-fair"]                # stale / lost-lock writes happened and all were rejected
//! damaged = ["redlock"]               # a stale or lost-lock write was accepted
//! min_throughput = { all = 10, redis-setnx = 1000 }   # measured acquisitions/s, at least
//! safe_in = { all = ["pause-client#1"] }  # no violation in the first `pause-client` window
//! ```
//!
//! A backend the run has but `safe` and `violated` do not name is expected to be safe all the
//! same (Jepsen's rule: an invalid result fails the run); `violated` is how a scenario says an
//! invalid verdict is the point.
//!
//! A backend's own name beats `all`: with `violated = { all = ["mutex"] }` and `safe =
//! ["pg-advisory"]`, every backend of the run but `pg-advisory` must break the lock (`fenced`
//! and `damaged` likewise). Both naming one backend, or both saying `all`, is an error.
//!
//! # Violations by kind
//!
//! A bare list (`violated = ["all"]`) accepts *any* violation, as it always has: a scenario
//! that expects a holder pause to break mutual exclusion then also passes a recipe that
//! started deleting other clients' locks. So `violated` may instead map backends (or `all`)
//! to the violation kinds they are expected to show (`lockbench_core::FindingKind`'s names:
//! `mutex`, `foreign_release`, ...; the list is [`crate::finding`]), and the rule is:
//!
//! - a kind written plainly **must** appear (in every repetition);
//! - a kind written with a trailing `?` **may** appear: a fault that causes it only on some
//!   runs (a paused holder's write lands before or after the next grant) is listed so, and
//!   the scenario stays deterministic;
//! - at least one listed kind must appear (a list of `?` kinds alone still demands a
//!   violation), and **any other** violation kind fails the expectation, however many expected
//!   ones came with it.
//!
//! # Safe in one fault window
//!
//! `violated` and `safe` judge a backend's whole run, but one scenario may apply a fault that
//! must break nothing next to one that must break the lock (`watchdog`: a holder pause shorter
//! than the lock's life, then a longer one). `safe_in` names windows as the scorecard names
//! their cells (the fault's verb, `-client` when it targeted client hosts only) with `#n`, the
//! n-th window of that cell in the run (from 1): no violation may be charged to it, and it
//! must have been applied.
//!
//! Names are checked here (an unknown backend or kind, a contradiction names its field); a
//! name that is valid but not in this run's `backends` (after `--set backends=...`) is not
//! checked, and the run says so. The results side (what each expectation measured, met /
//! failed / unknown, and the exit code) is `lockbench_results::expect`.

use crate::finding::FindingKind;
use crate::scenario::{ScenarioError, bad};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// The name that stands for every backend (or election recipe) of the run.
pub const ALL: &str = "all";

/// The fields no backend can be in at once. A backend named by its own name in one of a pair
/// is left out of the other's `all`: `violated = { all = ["mutex"] }` with `safe =
/// ["pg-advisory"]` expects every backend but `pg-advisory` to break the lock.
const OPPOSITE: [(&str, &str); 2] = [("safe", "violated"), ("fenced", "damaged")];

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
    /// it): the proof that the checkers are alive; by kind or not ([`Violated`]).
    #[serde(skip_serializing_if = "Violated::is_empty")]
    pub violated: Violated,
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
    /// Fault windows (`pause-client#1`: the first window of the scorecard cell `pause-client`)
    /// in which no violation may happen, by backend (`all` for every backend without its own
    /// entry).
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "kinds_by_backend"
    )]
    pub safe_in: BTreeMap<String, Vec<String>>,
}

/// A fault window as `safe_in` names it: the `n`-th (from 1) window of scorecard cell `cell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowName {
    /// The scorecard cell: the kind, `<kind>-client` for client hosts only.
    pub cell: crate::FaultCell,
    /// Its place among the cell's windows, from 1.
    pub n: usize,
}

impl WindowName {
    /// Reads `pause-client#1`.
    pub fn parse(name: &str) -> Result<WindowName, String> {
        let bad = || {
            format!(
                "`{name}` is no fault window: write the scorecard cell and the window's place, \
                 e.g. `pause-client#1` (the first holder pause) or `partition#2`"
            )
        };
        let (cell, n) = name.rsplit_once('#').ok_or_else(bad)?;
        let n: usize = n.parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(bad());
        }
        let cell = cell.parse().map_err(|_| bad())?;
        Ok(WindowName { cell, n })
    }
}

impl std::fmt::Display for WindowName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.cell, self.n)
    }
}

/// `"zk-fair"` or `["zk-fair", "redlock"]`: `--set expect.safe=all` writes a string.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(OneOrMany::deserialize(d)?.into())
}

/// `{ all = "mutex" }` or `{ all = ["mutex", "token_reuse?"] }`: `--set
/// expect.violated.all=mutex` writes a string.
fn kinds_by_backend<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    let map = BTreeMap::<String, OneOrMany>::deserialize(d)?;
    Ok(map.into_iter().map(|(k, v)| (k, v.into())).collect())
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrMany> for Vec<String> {
    fn from(v: OneOrMany) -> Self {
        match v {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// `expect.violated`: the backends whose verdict must be invalid, and which kinds of violation
/// each may show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a backend, a list of backends, or a table of backend = [violation kinds]"
)]
pub enum Violated {
    /// `["redlock"]` (or a single name): any violation meets it (the meaning before kinds).
    Any(#[serde(deserialize_with = "one_or_many")] Vec<String>),
    /// `{ all = ["mutex"], redlock = ["mutex", "token_reuse?"] }`: per backend (its own entry,
    /// else `all`), the kinds it must (plain) or may (`?`) show; no other.
    ByKind(#[serde(deserialize_with = "kinds_by_backend")] BTreeMap<String, Vec<String>>),
}

impl Default for Violated {
    fn default() -> Self {
        Violated::Any(Vec::new())
    }
}

impl Violated {
    /// Nothing expected to be violated.
    pub fn is_empty(&self) -> bool {
        match self {
            Violated::Any(v) => v.is_empty(),
            Violated::ByKind(m) => m.is_empty(),
        }
    }

    /// The backends (or `all`) it names.
    pub fn names(&self) -> Vec<String> {
        match self {
            Violated::Any(v) => v.clone(),
            Violated::ByKind(m) => m.keys().cloned().collect(),
        }
    }

    /// The kind rule for `backend` (one of those it names), `None` when any violation will do
    /// (a bare list).
    fn rule(&self, backend: &str) -> Option<Kinds> {
        let Violated::ByKind(m) = self else {
            return None;
        };
        let list = m.get(backend).or_else(|| m.get(ALL))?;
        Kinds::parse(list).ok()
    }
}

/// The violation kinds one backend is expected to show: those it must, those it may.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    /// Written plainly: each must appear.
    pub must: Vec<FindingKind>,
    /// Written with a trailing `?`: each may appear.
    pub may: Vec<FindingKind>,
}

impl Kinds {
    /// Reads `["mutex", "token_reuse?"]`; an unknown kind, a kind that is no violation or an
    /// empty list is an error.
    pub fn parse(list: &[String]) -> Result<Kinds, String> {
        if list.is_empty() {
            return Err(
                "name at least one violation kind (or use a bare list of backends: any \
                        violation)"
                    .into(),
            );
        }
        let mut kinds = Kinds::default();
        for entry in list {
            let (name, optional) = match entry.strip_suffix('?') {
                Some(name) => (name, true),
                None => (entry.as_str(), false),
            };
            let kind = FindingKind::parse(name)?;
            if !kind.is_violation() {
                return Err(format!(
                    "`{name}` is fencing doing its job, not a violation (expect it with `fenced`)"
                ));
            }
            if optional {
                kinds.may.push(kind);
            } else {
                kinds.must.push(kind);
            }
        }
        Ok(kinds)
    }

    /// Whether `kind` is listed, as a must or a may.
    pub fn allows(&self, kind: FindingKind) -> bool {
        self.must.contains(&kind) || self.may.contains(&kind)
    }

    /// The list as written: `mutex, token_reuse?`.
    pub fn describe(&self) -> String {
        let must = self.must.iter().map(|k| k.name().to_string());
        let may = self.may.iter().map(|k| format!("{}?", k.name()));
        must.chain(may).collect::<Vec<_>>().join(", ")
    }
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
    /// Safety verdict `invalid`; with `Some`, only by these kinds.
    Violated(Option<Kinds>),
    /// Stale / lost-lock writes happened and were all rejected.
    Fenced,
    /// A stale / lost-lock write was accepted.
    Damaged,
    /// At least this many acquisitions/s.
    MinThroughput(f64),
    /// No violation charged to this fault window, which was applied.
    SafeIn(WindowName),
}

impl Expect {
    /// The name results use: the `[expect]` key.
    pub fn name(&self) -> &'static str {
        match self {
            Expect::Safe { .. } => "safe",
            Expect::Violated(_) => "violated",
            Expect::Fenced => "fenced",
            Expect::Damaged => "damaged",
            Expect::MinThroughput(_) => "min_throughput",
            Expect::SafeIn(_) => "safe_in",
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

    fn lists(&self) -> [(&'static str, Vec<String>); 4] {
        [
            ("safe", self.safe.clone()),
            ("violated", self.violated.names()),
            ("fenced", self.fenced.clone()),
            ("damaged", self.damaged.clone()),
        ]
    }

    /// Every `(field, backend or all)` the table names, in every field.
    fn named(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        let min = self
            .min_throughput
            .keys()
            .map(|n| ("min_throughput", n.clone()));
        let safe_in = self.safe_in.keys().map(|n| ("safe_in", n.clone()));
        self.lists()
            .into_iter()
            .flat_map(|(field, v)| v.into_iter().map(move |n| (field, n)))
            .chain(min)
            .chain(safe_in)
    }

    /// Checks that every name the table uses is `"all"` or a recipe `known` accepts, lock or
    /// election (the registry's: core knows no recipe), naming the field; `valid` lists the
    /// lock recipes for the error.
    pub fn check_names(
        &self,
        known: impl Fn(&str) -> bool,
        valid: &[&str],
    ) -> Result<(), ScenarioError> {
        let ok = |name: &str| name == ALL || known(name);
        match self.named().find(|(_, name)| !ok(name)) {
            Some((field, name)) => Err(bad(
                &format!("expect.{field}"),
                format!(
                    "unknown backend `{name}`; expected one of: {}, or \"{ALL}\" (every \
                     backend of the run)",
                    valid.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// Checks every value, naming the field (`expect.violated.zk-fair`, ...); the names are
    /// checked against the registered recipes by [`Expectations::check_names`].
    pub fn validate(&self, run: &[String]) -> Result<(), ScenarioError> {
        if let Violated::ByKind(m) = &self.violated {
            for (name, list) in m {
                Kinds::parse(list).map_err(|e| bad(&format!("expect.violated.{name}"), e))?;
            }
        }
        for (name, windows) in &self.safe_in {
            for w in windows {
                WindowName::parse(w).map_err(|e| bad(&format!("expect.safe_in.{name}"), e))?;
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
        for (a, b) in OPPOSITE {
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

    /// The list `field` writes.
    fn list(&self, field: &str) -> Vec<String> {
        self.lists()
            .into_iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
            .expect("a list field")
    }

    /// The backends of `run` that list `field` names: `all` stands for every one of them except
    /// those its opposite field ([`OPPOSITE`]) names by their own name.
    fn pick(&self, field: &str, run: &[String]) -> Vec<String> {
        let list = self.list(field);
        let opposite = OPPOSITE
            .iter()
            .find_map(|(a, b)| match field {
                f if f == *a => Some(*b),
                f if f == *b => Some(*a),
                _ => None,
            })
            .map(|f| self.list(f))
            .unwrap_or_default();
        let all = list.iter().any(|n| n == ALL);
        run.iter()
            .filter(|b| list.contains(b) || (all && !opposite.contains(b)))
            .cloned()
            .collect()
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
                add(Expect::Violated(self.violated.rule(b)));
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
            let windows = self.safe_in.get(b).or_else(|| self.safe_in.get(ALL));
            for w in windows.into_iter().flatten() {
                if let Ok(w) = WindowName::parse(w) {
                    add(Expect::SafeIn(w));
                }
            }
        }
        let named = self.named();
        for (field, name) in named {
            if name != ALL && !run.contains(&name) {
                out.not_in_run.push((format!("expect.{field}"), name));
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
                ("redis-broken-nonx".into(), Expect::Violated(None)),
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
        let known = |n: &str| ["zk-fair", "redlock", "zk-election"].contains(&n);
        let err = parse("safe = [\"zk-fast\"]")
            .check_names(known, &["zk-fair", "redlock"])
            .unwrap_err();
        assert_eq!(err.field, "expect.safe");
        assert!(
            err.problem.contains("zk-fast") && err.problem.contains("zk-fair, redlock"),
            "{err}"
        );
        parse("violated = [\"zk-election\", \"all\"]")
            .check_names(known, &[])
            .unwrap();
        let err = parse("safe = [\"redlock\"]\nviolated = [\"redlock\"]")
            .validate(&r)
            .unwrap_err();
        assert_eq!(err.field, "expect.violated");
        assert!(err.problem.contains("redlock"), "{err}");
        let err = parse("fenced = [\"all\"]\ndamaged = [\"all\"]")
            .validate(&r)
            .unwrap_err();
        assert_eq!(err.field, "expect.damaged");
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

    #[test]
    fn a_backends_own_name_beats_all_in_the_opposite_field() {
        let r = run(&["zk-fair", "pg-advisory", "redlock"]);
        let e = parse(
            "violated = { all = \"mutex\" }\nsafe = [\"pg-advisory\"]\n\
             fenced = [\"all\"]\ndamaged = [\"redlock\"]",
        );
        e.validate(&r).unwrap();
        let mutex = Expect::Violated(Some(Kinds {
            must: vec![FindingKind::Mutex],
            may: vec![],
        }));
        assert_eq!(
            e.resolve(&r).checks,
            vec![
                ("zk-fair".into(), mutex.clone()),
                ("zk-fair".into(), Expect::Fenced),
                ("pg-advisory".into(), Expect::Safe { implicit: false }),
                ("pg-advisory".into(), Expect::Fenced),
                ("redlock".into(), mutex),
                ("redlock".into(), Expect::Damaged),
            ]
        );
    }

    #[test]
    fn violated_by_kind_names_what_each_backend_must_and_may_show() {
        let r = run(&["zk-fair", "redlock", "redis-setnx"]);
        let e = parse(
            "violated = { all = \"mutex\", redlock = [\"mutex\", \"write_after_lock_lost_accepted?\"] }",
        );
        e.validate(&r).unwrap();
        let checks = e.resolve(&r).checks;
        let kinds = |must: &[FindingKind], may: &[FindingKind]| {
            Expect::Violated(Some(Kinds {
                must: must.to_vec(),
                may: may.to_vec(),
            }))
        };
        use FindingKind::{Mutex, WriteAfterLockLostAccepted};
        assert_eq!(checks[0], ("zk-fair".into(), kinds(&[Mutex], &[])));
        assert_eq!(
            checks[1],
            (
                "redlock".into(),
                kinds(&[Mutex], &[WriteAfterLockLostAccepted])
            )
        );
        // A bare list keeps its meaning: any violation.
        let old = parse("violated = [\"all\"]");
        assert_eq!(old.resolve(&r).checks[0].1, Expect::Violated(None));
        // It reads back as it was written (scenario.toml in the run directory).
        let text = toml::to_string(&e).unwrap();
        assert_eq!(toml::from_str::<Expectations>(&text).unwrap(), e);
        // Unknown kinds, kinds that are no violation, empty lists: errors naming the entry.
        for (bad, says) in [
            ("violated = { redlock = [\"overlap\"] }", "foreign_release"),
            (
                "violated = { redlock = [\"stale_write_rejected\"] }",
                "fenced",
            ),
            ("violated = { redlock = [] }", "at least one"),
        ] {
            let err = parse(bad).validate(&r).unwrap_err();
            assert_eq!(err.field, "expect.violated.redlock", "{bad}");
            assert!(err.problem.contains(says), "{bad}: {err}");
        }
        let err = parse("safe = [\"redlock\"]\nviolated = { redlock = [\"mutex\"] }")
            .validate(&r)
            .unwrap_err();
        assert_eq!(err.field, "expect.violated");
    }

    #[test]
    fn safe_in_names_a_window_by_its_scorecard_cell_and_place() {
        let r = run(&["zk-fair", "redis-broken-renew"]);
        let e = parse(
            "violated = { all = [\"mutex\"] }\n\
             safe_in = { all = \"pause-client#1\", redis-broken-renew = [] }",
        );
        e.validate(&r).unwrap();
        let window = WindowName {
            cell: crate::FaultCell::Clients(crate::FaultKind::Pause),
            n: 1,
        };
        assert_eq!(window.to_string(), "pause-client#1");
        let checks = e.resolve(&r).checks;
        assert!(checks.contains(&("zk-fair".into(), Expect::SafeIn(window))));
        assert!(
            !checks
                .iter()
                .any(|(b, c)| b == "redis-broken-renew" && matches!(c, Expect::SafeIn(_))),
            "its own (empty) entry wins over all: {checks:?}"
        );
        let text = toml::to_string(&e).unwrap();
        assert_eq!(toml::from_str::<Expectations>(&text).unwrap(), e);
        for bad in ["pause-client", "pause-client#0", "#1", "pause#x"] {
            let err = parse(&format!("safe_in = {{ all = [\"{bad}\"] }}"))
                .validate(&r)
                .unwrap_err();
            assert_eq!(err.field, "expect.safe_in.all", "{bad}");
            assert!(err.problem.contains("pause-client#1"), "{bad}: {err}");
        }
        let err = parse("safe_in = { zk-fare = \"pause#1\" }")
            .check_names(|n| n == "zk-fair", &["zk-fair"])
            .unwrap_err();
        assert_eq!(err.field, "expect.safe_in");
    }
}
