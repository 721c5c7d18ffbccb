//! The verdict of one backend's run: what the checkers found, charged to the fault windows
//! it happened in, with the cross-checks that can make a verdict unknown.
//!
//! The checkers each judge one property; [`judge`] merges their outcomes into one
//! [`SafetyResult`] (the `safety` section of `results.json`): the merged verdict, every
//! built-in checker's figures in fields of their own, every other checker's under `checks`,
//! each violation and fenced-off write charged to its fault window
//! ([`crate::attribution`]), and the verdict made `unknown` when the servers never saw the
//! run's requests ([`crate::cross_check`]): a run judged on a history the servers did not
//! take part in has shown nothing about them.

use crate::attribution::{self, Tally};
use crate::availability::Window;
use crate::checker::{self, Validity};
use crate::cross_check::Requests;
use crate::figures::Reports;
use crate::truth::TruthReport;
use crate::{CheckerOutcome, Safety};
use lockbench_core::{FindingKind, History};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The checkers' outcomes of one run, charged to `windows` (whose violation tallies this
/// fills), with the servers' request count beside the client's (`requests`).
pub fn judge(
    outcomes: Vec<CheckerOutcome>,
    windows: &mut [Window],
    requests: &Requests,
) -> SafetyResult {
    let checked = Safety::from_outcomes(outcomes);
    let (violations, fenced) = (
        attribution::violations(&checked),
        attribution::fenced(&checked),
    );
    let outside = attribution::attribute(windows, &violations, Tally::Violations);
    let fenced_outside = attribution::attribute(windows, &fenced, Tally::Fenced);
    let mut first: BTreeMap<FindingKind, lockbench_core::Nanos> = BTreeMap::new();
    for f in checked.findings().filter(|f| f.kind.is_violation()) {
        let at = first.entry(f.kind).or_insert(f.at);
        *at = (*at).min(f.at);
    }
    let mut safety = SafetyResult::from(checked);
    safety.first_violations = first
        .into_iter()
        .map(|(kind, at)| FirstViolation { kind, at_ns: at.0 })
        .collect();
    for (kind, _) in &violations {
        *safety.violation_kinds.entry(kind.to_string()).or_insert(0) += 1;
    }
    safety.outside_fault_windows = outside;
    safety.fenced_outside_fault_windows = fenced_outside;
    if let Some(why) = &requests.unseen {
        safety.failed_checkers.push(format!("server count: {why}"));
        if safety.verdict == Validity::Valid {
            safety.verdict = Validity::Unknown;
        }
    }
    safety
}

/// The `server_truth` figures of a run whose servers were observed: the checker
/// ([`crate::truth`]) over `history`, with the observer's note and requests.
pub fn server_truth(
    history: &History,
    note: Option<String>,
    observer_requests: u64,
) -> ServerTruth {
    let figures = crate::truth::check(history);
    let note = match (note, &figures) {
        (None, None) => Some("the observer recorded nothing".to_string()),
        (note, _) => note,
    };
    ServerTruth {
        note,
        observer_requests,
        figures,
    }
}

/// Safety findings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SafetyResult {
    /// `valid`, `invalid` or `unknown`.
    pub verdict: Validity,
    /// Overlap episodes: a grant made while another client still believed it held the key,
    /// lasting while any holder from before it remains (one paused holder = one episode).
    pub mutex_violations: u64,
    /// Grants made while another client still believed it held the key.
    #[serde(default)]
    pub overlapping_grants: u64,
    /// Total overlap of such holds, ms.
    pub overlap_ms: f64,
    /// Longest single overlap, ms.
    pub max_overlap_ms: f64,
    /// Releases that found their lock already gone.
    pub locks_lost: u64,
    /// Stale writes the resource accepted (damage).
    pub stale_writes_accepted: u64,
    /// Stale writes the resource rejected (fencing worked).
    pub stale_writes_rejected: u64,
    /// Writes by a client after another client had been granted the same key since its own
    /// grant: its lock was already gone (expired or taken over), whatever it believed.
    #[serde(default)]
    pub writes_after_lock_lost: u64,
    /// Of those, the writes the resource accepted (damage, unless fencing stopped them).
    #[serde(default)]
    pub writes_after_lock_lost_accepted: u64,
    /// Writes without a fencing token (the resource could not judge them).
    pub unfenced_writes: u64,
    /// Grants whose fencing token was not above every token granted before on the same key
    /// (handed out twice, e.g. by a promoted Redis replica, or gone backwards): fencing's
    /// premise broken. Makes the verdict `invalid`.
    #[serde(default)]
    pub token_reuses: u64,
    /// Releases that reported success after the lock had been granted to another client: they
    /// deleted that client's lock (a plain `DEL`, a compare-and-delete whose compare was
    /// ignored). Makes the verdict `invalid`; the `release` checker's figures are in
    /// `checks.release`.
    #[serde(default)]
    pub foreign_releases: u64,
    /// Renewals (`workload.renew_every`) that reported success after the lock had been
    /// granted to another client: they extended that client's lock (a `PEXPIRE` without the
    /// compare) and told the renewer it still held it. Makes the verdict `invalid`; the renew
    /// figures (`renews_ok`, `renews_failed`) are in `checks.release`.
    #[serde(default)]
    pub foreign_renews: u64,
    /// Shared-lock grants made next to an incompatible holder of the other mode: a reader
    /// granted while a writer held the key, or a writer granted while a reader did (only for
    /// workloads with readers, `workload.read_fraction` > 0). Makes the verdict `invalid`;
    /// the `rwlock` checker's figures are in `checks.rwlock` (and `shared_lock`). Writer/writer
    /// conflicts are `mutex_violations`.
    #[serde(default)]
    pub rw_conflicts: u64,
    /// Writes the protected resource judged otherwise than the history does (the fencing
    /// audit recomputes each write's staleness from the history alone): instrument faults.
    /// Any makes the verdict `unknown`, and each is described in `failed_checkers`.
    #[serde(default)]
    pub instrument_faults: u64,
    /// Tokened writes concurrent with a higher accepted write: the history cannot order them,
    /// so the audit accepts either staleness flag for these.
    #[serde(default)]
    pub stale_writes_ambiguous: u64,
    /// Checkers that failed (their failure makes the verdict `unknown`).
    pub failed_checkers: Vec<String>,
    /// Every violation the checkers found, by kind (`lockbench_core::FindingKind`'s names:
    /// `mutex`, `foreign_release`, ...; writes fencing stopped are not violations): what the
    /// expectations judge a `violated` list by. Absent when there were none, and in results
    /// written before kinds were counted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub violation_kinds: BTreeMap<String, u64>,
    /// Violations (scorecard kinds) that happened in no applied fault window (nor within
    /// 2 s after one): the scorecard's `none` cell. Absent when there were none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outside_fault_windows: BTreeMap<String, u64>,
    /// The first violation of each kind and when it happened: where the report's history
    /// excerpt looks. Absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_violations: Vec<FirstViolation>,
    /// Writes fencing stopped outside every applied fault window, by kind (the scorecard's
    /// `none` cell, `fenced`). Absent when there were none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fenced_outside_fault_windows: BTreeMap<String, u64>,
    /// The outcome of every checker beyond the built-in ones above (`granted`, `mutex`,
    /// `fencing`, `lost`), by checker name: its verdict and figures. Absent when the run used
    /// only the built-in checkers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, CheckResult>,
}

/// One checker's outcome as written to `results.json` (`safety.checks.<name>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// `valid`, `invalid` or `unknown`.
    pub validity: Validity,
    /// The checker's own figures; `null` when it failed.
    pub figures: serde_json::Value,
    /// Why the verdict is `unknown`, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SafetyResult {
    /// Violations that did damage: mutex violations, reader/writer conflicts, stale writes
    /// accepted, writes after the lock was lost that the resource accepted, and releases and
    /// renewals of another client's lock.
    pub fn damage(&self) -> u64 {
        self.mutex_violations
            + self.rw_conflicts
            + self.stale_writes_accepted
            + self.writes_after_lock_lost_accepted
            + self.foreign_releases
            + self.foreign_renews
    }

    /// Writes fencing stopped: the stale writes the resource rejected (fencing doing its job,
    /// not damage). A rejected write after the lock was lost is one of them: a fencing
    /// resource rejects only stale tokens (the fencing audit checks that it does).
    pub fn fenced_off(&self) -> u64 {
        self.stale_writes_rejected
    }

    /// The kinds of violation that actually happened, with their counts, most severe first
    /// (`["2 overlaps", "1 reused token"]`): what the table, the HTML summary and the
    /// `FINDING:` lines say, so a run never reads "VIOLATED: 0 overlaps, 0 stale accepted".
    ///
    /// The kinds with a field of their own are counted as that field counts them (overlap
    /// *episodes* for `mutex`); any other kind from [`SafetyResult::violation_kinds`].
    pub fn violated_kinds(&self) -> Vec<String> {
        FindingKind::violations()
            .filter_map(|k| {
                let n = self.count(k);
                (n > 0).then(|| k.counted(n))
            })
            .collect()
    }

    /// How many violations of kind `k` the checkers counted (as [`Self::violated_kinds`]
    /// counts them).
    pub fn count(&self, k: FindingKind) -> u64 {
        match k {
            FindingKind::Mutex => self.mutex_violations,
            FindingKind::RwConflict => self.rw_conflicts,
            FindingKind::StaleWriteAccepted => self.stale_writes_accepted,
            FindingKind::WriteAfterLockLostAccepted => self.writes_after_lock_lost_accepted,
            FindingKind::TokenReuse => self.token_reuses,
            FindingKind::ForeignRelease => self.foreign_releases,
            FindingKind::ForeignRenew => self.foreign_renews,
            _ => self.violation_kinds.get(k.name()).copied().unwrap_or(0),
        }
    }
}

impl From<Safety> for SafetyResult {
    /// The checkers' merged outcomes, not yet charged to fault windows.
    fn from(s: Safety) -> SafetyResult {
        let o = s.outcomes.as_slice();
        let m = o.mutex().cloned().unwrap_or_default();
        let f = o.fencing().cloned().unwrap_or_default();
        let l = o.lost().cloned().unwrap_or_default();
        let a = o.audit().cloned().unwrap_or_default();
        let rel = o.release().cloned().unwrap_or_default();
        let rw = o.rwlock().cloned().unwrap_or_default();
        let checks = s
            .outcomes
            .iter()
            .filter(|o| !checker::BUILT_IN.contains(&o.name))
            .map(|o| {
                let check = CheckResult {
                    validity: o.validity,
                    figures: o.figures.to_json(),
                    note: o.note.clone(),
                };
                (o.name.to_string(), check)
            })
            .collect();
        SafetyResult {
            verdict: s.verdict,
            mutex_violations: m.violations,
            overlapping_grants: m.overlapping_grants,
            // To the nanosecond: an episode of a few µs must not read 0.
            overlap_ms: round6(m.overlap_ms),
            max_overlap_ms: round6(m.max_overlap_ms),
            locks_lost: m.locks_lost,
            stale_writes_accepted: f.stale_writes_accepted,
            stale_writes_rejected: f.stale_writes_rejected,
            writes_after_lock_lost: l.writes_after_lock_lost,
            writes_after_lock_lost_accepted: l.accepted,
            unfenced_writes: f.unfenced_writes,
            token_reuses: f.token_reuses,
            foreign_releases: rel.foreign_releases,
            foreign_renews: rel.foreign_renews,
            rw_conflicts: rw.reader_writer_conflicts,
            instrument_faults: a.faults,
            stale_writes_ambiguous: a.ambiguous,
            failed_checkers: s.failed_checkers,
            violation_kinds: Default::default(),
            outside_fault_windows: Default::default(),
            first_violations: Vec::new(),
            fenced_outside_fault_windows: Default::default(),
            checks,
        }
    }
}

/// The first violation of a kind in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstViolation {
    /// What was found.
    pub kind: FindingKind,
    /// When (the offending grant, write or release), ns on the history's clock.
    pub at_ns: u64,
}

/// What the server-side observer saw of one backend's run, and what the checker made of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerTruth {
    /// Why nothing (or not everything) was observed: the recipe has no observer, or it
    /// stopped; absent when it watched the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Requests the observer sent that the servers' counters include, taken off
    /// `requests.server_count` (its sessions' pings, ZooKeeper only, are not).
    pub observer_requests: u64,
    /// The figures (`lockbench_analysis::truth`); absent when nothing was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<TruthReport>,
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
