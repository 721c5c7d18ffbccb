//! The gate measuring its own noise (an A/A test): runs of one build and one scenario, nothing
//! changed between them, each compared with the one before it exactly as the nightly gate
//! compares tonight with last night. Every flag is then a false one, so the share of
//! comparisons that flagged anything is the gate's false-alarm rate on this machine, and the
//! metrics that flagged say where the noise is.
//!
//! Why adjacent pairs and not every pair: the gate compares consecutive nights, and the pairs
//! of a chain share no run with more than two others, so the rate is not dominated by one odd
//! run the way it would be over all pairs.

use crate::{Comparison, Config, RunResults, Verdict, compare};
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
    if let Some((label, r)) = runs.iter().find(|(_, r)| r.scenario != runs[0].1.scenario) {
        return Err(format!(
            "{label} is a run of `{}`, the first of `{}`: an A/A test compares runs of one scenario",
            r.scenario, runs[0].1.scenario
        ));
    }
    let mut noise = Noise {
        pairs: Vec::new(),
        by_metric: BTreeMap::new(),
        tests: 0,
    };
    for w in runs.windows(2) {
        let c: Comparison = compare(&w[0].1, &w[1].1, config);
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
            base: w[0].0.clone(),
            new: w[1].0.clone(),
            regressions: c.regressions(),
            improvements: c.improvements(),
            flagged,
        });
    }
    Ok(noise)
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
