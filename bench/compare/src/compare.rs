//! The comparison itself: match results by (backend, workload), one row per metric.

use crate::config::{Config, Metric};
use crate::stats;
use anyhow::Context;
use lockbench_results::model::{BackendResult, Repetition};
use lockbench_results::{RunResults, Status, Validity};
use serde::Serialize;
use std::path::Path;

/// Criterion's three outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Better by more than the noise threshold (and significant, with repetitions).
    Improved,
    /// Worse by more than the noise threshold (and significant), or new safety damage, or the
    /// backend stopped running.
    Regressed,
    /// Within noise, or not significant.
    NonSignificant,
}

impl Verdict {
    /// Short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "REGRESSED",
            Verdict::NonSignificant => "no change",
        }
    }
}

/// One (backend, workload, metric) comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Recipe name.
    pub backend: String,
    /// Workload name.
    pub workload: String,
    /// The metric.
    pub metric: Metric,
    /// Baseline value (the mean of the repetitions when there are several).
    pub base: Option<f64>,
    /// New value (likewise).
    pub new: Option<f64>,
    /// Samples on each side.
    pub base_n: usize,
    /// Samples on each side.
    pub new_n: usize,
    /// `(new - base) / base`.
    pub change: Option<f64>,
    /// Welch's two-sided p-value, when both sides have at least two samples.
    pub p_value: Option<f64>,
    /// The p-value adjusted for every test of this comparison (Benjamini–Hochberg): the
    /// figure the verdict compares with the significance level.
    pub q_value: Option<f64>,
    /// The metric's noise threshold.
    pub threshold: f64,
    /// The outcome.
    pub verdict: Verdict,
    /// Why, when it is not just the numbers.
    pub note: String,
}

/// A (backend, workload) present on one side only.
#[derive(Clone, Debug, Serialize)]
pub struct Missing {
    /// Recipe name.
    pub backend: String,
    /// Workload name.
    pub workload: String,
    /// `base` when only the baseline has it, `new` when only the new run has it.
    pub only_in: &'static str,
}

/// A (backend, workload) that ran with a deliberate slowdown (`workload.slowdown`) on either
/// side: its changes are (partly) made on purpose, as when the gate's power is measured.
#[derive(Clone, Debug, Serialize)]
pub struct Injected {
    /// Recipe name.
    pub backend: String,
    /// Workload name.
    pub workload: String,
    /// The baseline's delay per acquire, ms.
    pub base_ms: Option<f64>,
    /// The new run's delay per acquire, ms.
    pub new_ms: Option<f64>,
}

/// Everything `lockbench compare` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Baseline scenario and start time, for the header.
    pub base_label: String,
    /// New run's scenario and start time.
    pub new_label: String,
    /// One row per shared (backend, workload, metric).
    pub rows: Vec<Row>,
    /// How many rows were tested for significance (both sides had repetitions): the family
    /// the q-values are adjusted over.
    pub tests: usize,
    /// Results on one side only.
    pub missing: Vec<Missing>,
    /// Results made with an injected slowdown, on either side.
    pub injected: Vec<Injected>,
    /// The configuration used.
    pub config: Config,
}

impl Comparison {
    /// Rows that regressed.
    pub fn regressions(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regressed)
            .count()
    }

    /// Rows that improved.
    pub fn improvements(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Improved)
            .count()
    }
}

/// Loads a `results.json`, or the one in a run directory.
pub fn load(path: &Path) -> anyhow::Result<RunResults> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a results.json", file.display()))
}

fn label(r: &RunResults) -> String {
    format!("{} ({})", r.scenario, r.started_at)
}

/// Compares `new` against `base`.
pub fn compare(base: &RunResults, new: &RunResults, config: &Config) -> Comparison {
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    let find = |rs: &RunResults, b: &BackendResult| {
        rs.results
            .iter()
            .find(|r| r.backend == b.backend && r.workload == b.workload)
            .cloned()
    };
    let mut injected = Vec::new();
    for b in &base.results {
        match find(new, b) {
            Some(n) => {
                if b.injected_slowdown_ms.is_some() || n.injected_slowdown_ms.is_some() {
                    injected.push(Injected {
                        backend: b.backend.clone(),
                        workload: b.workload.clone(),
                        base_ms: b.injected_slowdown_ms,
                        new_ms: n.injected_slowdown_ms,
                    });
                }
                compare_result(b, &n, config, &mut rows)
            }
            None => missing.push(Missing {
                backend: b.backend.clone(),
                workload: b.workload.clone(),
                only_in: "base",
            }),
        }
    }
    for n in &new.results {
        if find(base, n).is_none() {
            missing.push(Missing {
                backend: n.backend.clone(),
                workload: n.workload.clone(),
                only_in: "new",
            });
        }
    }
    let tests = judge(&mut rows, config);
    Comparison {
        base_label: label(base),
        new_label: label(new),
        rows,
        tests,
        missing,
        injected,
        config: config.clone(),
    }
}

/// The repetitions to use as samples: every `ok` repetition, or the result itself.
pub(crate) fn samples(r: &BackendResult) -> Vec<Repetition> {
    let reps: Vec<Repetition> = r
        .repetitions
        .iter()
        .filter(|x| x.status == Status::Ok)
        .cloned()
        .collect();
    if reps.is_empty() {
        vec![Repetition::of(r)]
    } else {
        reps
    }
}

pub(crate) fn value(rep: &Repetition, m: Metric) -> Option<f64> {
    match m {
        Metric::Throughput => Some(rep.throughput_per_s),
        Metric::AcquireP50 => rep.acquire_latency_us.as_ref().map(|p| p.p50 as f64),
        Metric::AcquireP90 => rep.acquire_latency_us.as_ref().map(|p| p.p90 as f64),
        Metric::AcquireP99 => rep.acquire_latency_us.as_ref().map(|p| p.p99 as f64),
        Metric::HandoffP50 => rep.handoff_latency_us.as_ref().map(|p| p.p50 as f64),
        Metric::HandoffP99 => rep.handoff_latency_us.as_ref().map(|p| p.p99 as f64),
        Metric::Safety => Some(rep.violations as f64),
        Metric::Status => None,
    }
}

fn row(b: &BackendResult, metric: Metric, config: &Config) -> Row {
    Row {
        backend: b.backend.clone(),
        workload: b.workload.clone(),
        metric,
        base: None,
        new: None,
        base_n: 0,
        new_n: 0,
        change: None,
        p_value: None,
        q_value: None,
        threshold: config.threshold_for(&b.backend, metric),
        verdict: Verdict::NonSignificant,
        note: String::new(),
    }
}

fn compare_result(b: &BackendResult, n: &BackendResult, config: &Config, rows: &mut Vec<Row>) {
    // A backend that stopped running is the regression; its figures mean nothing.
    if b.status != Status::Ok || n.status != Status::Ok {
        let mut r = row(b, Metric::Status, config);
        r.verdict = match (b.status == Status::Ok, n.status == Status::Ok) {
            (true, false) => Verdict::Regressed,
            (false, true) => Verdict::Improved,
            _ => Verdict::NonSignificant,
        };
        r.note = format!(
            "status {} -> {}{}",
            b.status.name(),
            n.status.name(),
            n.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
        rows.push(r);
        return;
    }
    let (bs, ns) = (samples(b), samples(n));
    for metric in Metric::NUMERIC {
        let bv: Vec<f64> = bs.iter().filter_map(|s| value(s, metric)).collect();
        let nv: Vec<f64> = ns.iter().filter_map(|s| value(s, metric)).collect();
        if bv.is_empty() && nv.is_empty() {
            continue;
        }
        rows.push(numeric_row(b, metric, &bv, &nv, config));
    }
    rows.push(safety_row(b, n, &bs, &ns, config));
}

fn numeric_row(b: &BackendResult, metric: Metric, bv: &[f64], nv: &[f64], config: &Config) -> Row {
    let mut r = row(b, metric, config);
    r.base_n = bv.len();
    r.new_n = nv.len();
    if bv.is_empty() || nv.is_empty() {
        r.base = (!bv.is_empty()).then(|| stats::mean(bv));
        r.new = (!nv.is_empty()).then(|| stats::mean(nv));
        r.note = format!("only in {}", if bv.is_empty() { "new" } else { "base" });
        return r;
    }
    let (base, new) = (stats::mean(bv), stats::mean(nv));
    r.base = Some(base);
    r.new = Some(new);
    let change = if base == 0.0 {
        if new == 0.0 {
            0.0
        } else {
            f64::INFINITY * new.signum()
        }
    } else {
        (new - base) / base
    };
    r.change = Some(change);
    r.p_value = stats::welch_p(bv, nv);
    r
}

/// Adjusts the p-values of every tested row together ([`stats::benjamini_hochberg`]) and gives
/// each numeric row its verdict; returns how many rows were tested.
fn judge(rows: &mut [Row], config: &Config) -> usize {
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].p_value.is_some())
        .collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| rows[i].p_value).collect();
    for (&i, q) in tested.iter().zip(stats::benjamini_hochberg(&p)) {
        rows[i].q_value = Some(q);
    }
    for r in rows.iter_mut() {
        if Metric::NUMERIC.contains(&r.metric) && r.change.is_some() {
            decide(r, config);
        }
    }
    tested.len()
}

/// A numeric row's verdict: beyond its noise threshold, beyond the latency floor, and (when
/// tested) significant after the adjustment.
fn decide(r: &mut Row, config: &Config) {
    let (Some(base), Some(new), Some(change)) = (r.base, r.new, r.change) else {
        return;
    };
    let beyond_noise = change.abs() > r.threshold;
    let beyond_floor = !r.metric.is_latency() || (new - base).abs() >= config.latency_floor_us;
    let significant = r.q_value.is_none_or(|q| q < config.significance);
    if beyond_noise && beyond_floor && significant {
        let better = (change > 0.0) == r.metric.higher_is_better();
        r.verdict = if better {
            Verdict::Improved
        } else {
            Verdict::Regressed
        };
    } else if beyond_noise && beyond_floor {
        r.note = format!(
            "q = {:.3} >= {} (p = {:.3})",
            r.q_value.unwrap_or(1.0),
            config.significance,
            r.p_value.unwrap_or(1.0)
        );
    } else if beyond_noise {
        r.note = format!("below the {} µs latency floor", config.latency_floor_us);
    }
}

fn safety_row(
    b: &BackendResult,
    n: &BackendResult,
    bs: &[Repetition],
    ns: &[Repetition],
    config: &Config,
) -> Row {
    let mut r = row(b, Metric::Safety, config);
    // Damage anywhere in the run counts: the main result and every repetition.
    let damage = |res: &BackendResult, reps: &[Repetition]| {
        reps.iter()
            .map(|x| x.violations)
            .sum::<u64>()
            .max(res.safety.damage())
    };
    let (bd, nd) = (damage(b, bs), damage(n, ns));
    r.base = Some(bd as f64);
    r.new = Some(nd as f64);
    r.base_n = bs.len();
    r.new_n = ns.len();
    let unknown = |res: &BackendResult, reps: &[Repetition]| {
        res.safety.verdict == Validity::Unknown
            || reps.iter().any(|x| x.verdict == Validity::Unknown)
    };
    (r.verdict, r.note) = if bd == 0 && nd > 0 {
        (
            Verdict::Regressed,
            format!("new safety violation: {nd} (baseline had none)"),
        )
    } else if bd > 0 && nd == 0 {
        (Verdict::Improved, "no safety violation any more".into())
    } else if bd > 0 {
        (Verdict::NonSignificant, "violations in both runs".into())
    } else if unknown(n, ns) && !unknown(b, bs) {
        (
            Verdict::Regressed,
            "safety verdict unknown: a checker failed".into(),
        )
    } else {
        (Verdict::NonSignificant, String::new())
    };
    r
}
