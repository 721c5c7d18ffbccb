//! The gate measuring its own noise (an A/A test): runs of one build and one scenario, nothing
//! changed between them, each compared with the one before it exactly as the nightly gate
//! compares tonight with last night. Every flag is then a false one, so the share of
//! comparisons that flagged anything is the gate's false-alarm rate on this machine, and the
//! metrics that flagged say where the noise is.
//!
//! Why adjacent pairs and not every pair: the gate compares consecutive nights, and the pairs
//! of a chain share no run with more than two others, so the rate is not dominated by one odd
//! run the way it would be over all pairs.
//!
//! The same runs give the gate's power: each metric's spread from run to run (its coefficient
//! of variation) sets the smallest change the gate catches 19 times in 20 ([`detectable`]).
//! With `n` rounds a side (`scripts/gate`'s turns) the difference of the sides' means has a
//! standard error of `CV·√(2/n)`; a change is caught when it clears the metric's threshold
//! and, with repetitions, Welch's test at the significance level divided among the
//! comparison's tests (Benjamini–Hochberg's bar for a single true change among them). The
//! smallest change that does both with probability 0.95 is `max(thr + t₀.₉₅·se,
//! (t_crit + t₀.₉₅)·se)`, Student's t on `2n − 2` degrees of freedom (the normal for one run a
//! side, where the threshold alone decides). An approximation that assumes the run-to-run
//! spread is the same on both sides; measuring it directly means injecting a slowdown
//! (`workload.slowdown`) and counting how often the gate fails.
//!
//! And they calibrate it ([`calibrate`]): a threshold per backend and metric, the change its
//! run-to-run spread alone exceeds once in `m / α` comparisons (`m` the comparison's tests, `α`
//! the significance), so a comparison with nothing changed fails at most once in `1 / α` on
//! the threshold alone, whatever the backend. A quiet backend gets a narrow band and a noisy
//! one a wide band, instead of one default for all.

use crate::compare::{samples, value};
use crate::{Comparison, Config, Metric, RunResults, Verdict, compare};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One comparison of the chain.
#[derive(Clone, Debug)]
pub struct Pair {
    /// The earlier run's label.
    pub base: String,
    /// The later run's label.
    pub new: String,
    /// Rows the gate called regressed (it would have failed the night).
    pub regressions: usize,
    /// Rows it called improved (a regression had the order been the other way round).
    pub improvements: usize,
    /// What flagged: `backend metric change`.
    pub flagged: Vec<String>,
}

/// The chain's comparisons and what they add up to.
#[derive(Clone, Debug)]
pub struct Noise {
    /// Each comparison, in run order.
    pub pairs: Vec<Pair>,
    /// How often each metric flagged, either way.
    pub by_metric: BTreeMap<String, usize>,
    /// Rows tested for significance in one comparison (the family its correction covers).
    pub tests: usize,
}

impl Noise {
    /// Comparisons in which the gate failed (a regression).
    pub fn failed(&self) -> usize {
        self.pairs.iter().filter(|p| p.regressions > 0).count()
    }

    /// Comparisons that flagged anything, either way.
    pub fn flagged(&self) -> usize {
        self.pairs
            .iter()
            .filter(|p| p.regressions + p.improvements > 0)
            .count()
    }
}

/// Compares each of `runs` (label, results; in the order they ran) with the one before.
pub fn chain(runs: &[(String, RunResults)], config: &Config) -> Result<Noise, String> {
    if runs.len() < 2 {
        return Err(format!(
            "{} run given: an A/A test compares runs of one build with each other, so it needs \
             at least two (ten or more to say anything about a rate)",
            runs.len()
        ));
    }
    one_scenario(runs)?;
    let pairs = runs
        .windows(2)
        .map(|w| (w[0].0.clone(), w[1].0.clone(), &w[0].1, &w[1].1));
    Ok(judge(pairs, config))
}

/// The gate as `scripts/gate` runs it, `rounds` runs a side in turns: every window of
/// `2 x rounds` consecutive runs split into the runs at even places (the baseline) and at odd
/// places (the candidate), each side merged ([`crate::merge::merge`]) and the two compared.
/// Successive windows share runs, so their comparisons are not independent of each other.
pub fn in_turns(
    runs: &[(String, RunResults)],
    rounds: usize,
    config: &Config,
) -> Result<Noise, String> {
    let span = 2 * rounds.max(1);
    if runs.len() < span {
        return Err(format!(
            "{} runs given: comparing {rounds} a side in turns needs at least {span}",
            runs.len()
        ));
    }
    one_scenario(runs)?;
    let mut pairs = Vec::new();
    for window in runs.windows(span) {
        let side = |first: usize| -> Result<(String, RunResults), String> {
            let picked: Vec<(String, RunResults)> =
                window.iter().skip(first).step_by(2).cloned().collect();
            let label = picked
                .iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            Ok((label, crate::merge::merge(&picked)?))
        };
        let (base_label, base) = side(0)?;
        let (new_label, new) = side(1)?;
        pairs.push((base_label, new_label, base, new));
    }
    let pairs = pairs
        .iter()
        .map(|(b, n, base, new)| (b.clone(), n.clone(), base, new));
    Ok(judge(pairs, config))
}

/// An error naming a run of another scenario than the first's.
pub(crate) fn one_scenario<'a>(
    runs: impl IntoIterator<Item = &'a (String, RunResults)>,
) -> Result<(), String> {
    let mut runs = runs.into_iter();
    let Some((_, first)) = runs.next() else {
        return Ok(());
    };
    match runs.find(|(_, r)| r.scenario != first.scenario) {
        Some((label, r)) => Err(format!(
            "{label} is a run of `{}`, the first of `{}`: the gate compares runs of one scenario",
            r.scenario, first.scenario
        )),
        None => Ok(()),
    }
}

/// Compares each (base label, new label, base, new) and adds up what flagged.
fn judge<'a>(
    pairs: impl Iterator<Item = (String, String, &'a RunResults, &'a RunResults)>,
    config: &Config,
) -> Noise {
    let mut noise = Noise {
        pairs: Vec::new(),
        by_metric: BTreeMap::new(),
        tests: 0,
    };
    for (base_label, new_label, base, new) in pairs {
        let c: Comparison = compare(base, new, config);
        noise.tests = noise.tests.max(c.tests);
        let mut flagged = Vec::new();
        for r in &c.rows {
            if matches!(r.verdict, Verdict::Regressed | Verdict::Improved) {
                *noise
                    .by_metric
                    .entry(r.metric.name().to_string())
                    .or_default() += 1;
                let change = r
                    .change
                    .map_or_else(|| "n/a".to_string(), |x| format!("{:+.0}%", x * 100.0));
                flagged.push(format!("{} {} {change}", r.backend, r.metric.name()));
            }
        }
        noise.pairs.push(Pair {
            base: base_label,
            new: new_label,
            regressions: c.regressions(),
            improvements: c.improvements(),
            flagged,
        });
    }
    noise
}

/// The smallest change of one backend's metric the gate catches 19 times in 20.
#[derive(Clone, Debug)]
pub struct Detectable {
    /// The backend.
    pub backend: String,
    /// The metric.
    pub metric: Metric,
    /// Its mean over the runs.
    pub mean: f64,
    /// Its coefficient of variation from run to run.
    pub cv: f64,
    /// The smallest relative change caught with probability 0.95 (0.2: 20 %).
    pub change: f64,
}

/// One backend's metric over a set of runs: its mean and its spread from run to run.
#[derive(Clone, Debug)]
pub struct Spread {
    /// The backend.
    pub backend: String,
    /// The metric.
    pub metric: Metric,
    /// Its mean over the runs (each run's own mean over its repetitions).
    pub mean: f64,
    /// Its coefficient of variation from run to run.
    pub cv: f64,
}

/// Every backend's numeric metrics over `runs`, where at least two runs measured them.
pub fn spread(runs: &[(String, RunResults)]) -> Vec<Spread> {
    let mut values: BTreeMap<(String, &'static str), (Metric, Vec<f64>)> = BTreeMap::new();
    for (_, run) in runs {
        for r in &run.results {
            let reps = samples(r);
            for m in Metric::NUMERIC {
                let v: Vec<f64> = reps.iter().filter_map(|x| value(x, m)).collect();
                if !v.is_empty() {
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    values
                        .entry((r.backend.clone(), m.name()))
                        .or_insert((m, Vec::new()))
                        .1
                        .push(mean);
                }
            }
        }
    }
    values
        .into_iter()
        .filter(|(_, (_, v))| v.len() >= 2)
        .map(|((backend, _), (metric, v))| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
            Spread {
                backend,
                metric,
                mean,
                cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            }
        })
        .collect()
}

/// Per backend and metric (throughput, acquire p50 and p99), the smallest change the gate
/// catches 19 times in 20 with `rounds` runs a side, from the spread of `runs` (see the
/// module docs), with each backend's own thresholds where `config` has them.
pub fn detectable(
    runs: &[(String, RunResults)],
    config: &Config,
    rounds: usize,
) -> Vec<Detectable> {
    let all = spread(runs);
    let tests = all.len().max(1) as f64;
    let n = rounds.max(1) as f64;
    let (t_crit, t_power) = if rounds >= 2 {
        let t = StudentsT::new(0.0, 1.0, 2.0 * n - 2.0).expect("positive degrees of freedom");
        (
            t.inverse_cdf(1.0 - config.significance / (2.0 * tests)),
            t.inverse_cdf(0.95),
        )
    } else {
        (0.0, Normal::standard().inverse_cdf(0.95))
    };
    all.into_iter()
        .filter(|s| {
            matches!(
                s.metric,
                Metric::Throughput | Metric::AcquireP50 | Metric::AcquireP99
            )
        })
        .map(|s| {
            let se = s.cv * (2.0 / n).sqrt();
            let threshold = config.threshold_for(&s.backend, s.metric);
            let change = (threshold + t_power * se).max((t_crit + t_power) * se);
            Detectable {
                backend: s.backend,
                metric: s.metric,
                mean: s.mean,
                cv: s.cv,
                change,
            }
        })
        .collect()
}

/// The smallest threshold a calibration writes: a change below 2 % is within what one run's
/// timing of its own window varies by.
const LEAST_THRESHOLD: f64 = 0.02;

/// `config` with a threshold of each backend's own for every metric `runs` measured: the
/// change that noise alone exceeds with probability `α / m` (two-sided, `m` the tests of one
/// comparison: every backend's metrics; `α` the significance), with `rounds` runs a side, so
/// that the comparisons' false alarms stay at `α` or below on the threshold alone. A normal
/// approximation from the runs' coefficients of variation: `z₁₋α/2m · CV · √(2/rounds)`, at
/// least 2 %.
pub fn calibrate(runs: &[(String, RunResults)], config: &Config, rounds: usize) -> Config {
    let all = spread(runs);
    let m = all.len().max(1) as f64;
    let z = Normal::standard().inverse_cdf(1.0 - config.significance / (2.0 * m));
    let n = rounds.max(1) as f64;
    let mut calibrated = config.clone();
    calibrated.backends.clear();
    for s in all {
        let threshold = (z * s.cv * (2.0 / n).sqrt()).max(LEAST_THRESHOLD);
        // Two decimals: the file is read by people too.
        calibrated.backends.entry(s.backend).or_default().insert(
            s.metric.name().to_string(),
            (threshold * 100.0).ceil() / 100.0,
        );
    }
    calibrated
}

/// A calibrated configuration as a thresholds file, its header saying where it came from.
pub fn calibration_toml(config: &Config, runs: &[(String, RunResults)], rounds: usize) -> String {
    let scenario = runs.first().map_or("", |(_, r)| r.scenario.as_str());
    format!(
        "# Noise thresholds calibrated by `lockbench noise --calibrate` from {} runs of `{scenario}`\n\
         # ({} to {}), for comparisons of {rounds} run(s) a side at significance {}: each backend's\n\
         # threshold is the change its run-to-run spread alone exceeds once in (tests / significance)\n\
         # comparisons. Use with `lockbench compare --config` (scripts/gate: GATE_CONFIG).\n{}",
        runs.len(),
        runs.first().map_or("", |(l, _)| l.as_str()),
        runs.last().map_or("", |(l, _)| l.as_str()),
        config.significance,
        toml::to_string(config).expect("a configuration serializes")
    )
}

/// The detectable changes as Markdown.
pub fn detectable_markdown(rows: &[Detectable], rounds: usize) -> String {
    let mut s = format!(
        "\n| backend | metric | mean | run-to-run CV | smallest change caught 19 times in 20 \
         ({rounds} run{} a side) |\n|---|---|---|---|---|\n",
        if rounds == 1 { "" } else { "s" }
    );
    for d in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.1}% | {:.0}% |",
            d.backend,
            d.metric.name(),
            d.mean,
            d.cv * 100.0,
            d.change * 100.0
        );
    }
    s
}

/// The chain as Markdown: a row per comparison, then the rates and the noisy metrics.
pub fn markdown(noise: &Noise) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| base | new | regressed | improved | flagged |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for p in &noise.pairs {
        let flagged = if p.flagged.is_empty() {
            "-".to_string()
        } else {
            p.flagged.join(", ")
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {flagged} |",
            p.base, p.new, p.regressions, p.improvements
        );
    }
    let n = noise.pairs.len();
    let _ = writeln!(
        s,
        "\nA/A: the gate failed {} of {n} comparisons of one build with itself ({:.0}%), and \
         flagged something either way in {} ({:.0}%); {} tests a comparison.",
        noise.failed(),
        100.0 * noise.failed() as f64 / n as f64,
        noise.flagged(),
        100.0 * noise.flagged() as f64 / n as f64,
        noise.tests
    );
    if noise.by_metric.is_empty() {
        let _ = writeln!(s, "No metric flagged.");
    } else {
        let each: Vec<String> = noise
            .by_metric
            .iter()
            .map(|(m, k)| format!("{m} {k}"))
            .collect();
        let _ = writeln!(s, "Flags by metric: {}.", each.join(", "));
    }
    if n < 10 {
        let _ = writeln!(
            s,
            "{n} comparisons are too few to estimate a rate: run ten or more."
        );
    }
    s
}
