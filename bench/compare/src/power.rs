//! The gate's power, counted rather than computed: runs with a slowdown injected on purpose
//! (`workload.slowdown`), made in turns with runs without it, and the gate run over and over on
//! draws of them. [`crate::noise::detectable`] computes the smallest change the gate catches
//! from the spread of runs without a change, assuming the spread is the same on both sides and
//! normal; this counts how often the gate, exactly as it judges (merged sides, thresholds,
//! Welch's test, the Benjamini–Hochberg correction over the whole comparison), caught each
//! backend's slowdown.
//!
//! Why draws and not disjoint trials: a trial of the nightly gate is six runs a side, about
//! 40 minutes on a 2-core machine; twenty disjoint trials would take a day. Each trial here
//! draws `rounds` of the plain runs and `rounds` of the slowed ones (seeded, without
//! replacement within a trial), so trials share runs and are not independent of each other:
//! the count estimates the rate, with more uncertainty than twenty disjoint trials would have.
//! The more runs there are beyond `rounds` a side, the less the trials overlap.

use crate::noise::spread;
use crate::{Config, Metric, RunResults, Verdict, compare};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How often the gate caught one backend's slowdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Caught {
    /// The backend.
    pub backend: String,
    /// The delay its slowed runs injected (ms), as their results record it.
    pub injected_ms: Option<f64>,
    /// The slowed runs' mean throughput against the plain runs' (-0.2: 20 % lower).
    pub throughput_change: Option<f64>,
    /// The same of the acquire p99.
    pub p99_change: Option<f64>,
    /// Trials in which the gate called its throughput regressed.
    pub caught_throughput: usize,
    /// Trials in which it called its acquire p99 regressed.
    pub caught_p99: usize,
    /// Trials in which it called any of its metrics regressed (the gate failed on it): a
    /// slowdown in the grant also lengthens the hand-off, which may flag alone.
    pub caught: usize,
    /// Trials.
    pub trials: usize,
}

/// Runs `trials` gates of `rounds` runs a side over draws of `plain` and `slowed` (labels and
/// results, of one scenario), each side merged and compared with `config`: per backend of the
/// slowed runs, how often a regression was called. Every run must be of the same scenario, and
/// each side must have at least `rounds` runs.
pub fn power(
    plain: &[(String, RunResults)],
    slowed: &[(String, RunResults)],
    rounds: usize,
    trials: usize,
    config: &Config,
) -> Result<Vec<Caught>, String> {
    let rounds = rounds.max(1);
    for (side, runs) in [("plain", plain), ("slowed", slowed)] {
        if runs.len() < rounds {
            return Err(format!(
                "{} {side} runs given: a gate of {rounds} runs a side needs at least {rounds}",
                runs.len()
            ));
        }
    }
    crate::noise::one_scenario(plain.iter().chain(slowed))?;
    // Per backend: trials caught on throughput, on acquire p99, on any metric.
    let mut caught: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for trial in 0..trials {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(trial as u64);
        let mut draw = |runs: &[(String, RunResults)]| {
            let picked: Vec<(String, RunResults)> =
                rand::seq::index::sample(&mut rng, runs.len(), rounds)
                    .into_iter()
                    .map(|i| runs[i].clone())
                    .collect();
            crate::merge::merge(&picked)
        };
        let (base, new) = (draw(plain)?, draw(slowed)?);
        let c = compare(&base, &new, config);
        let mut trial: BTreeMap<&str, [bool; 3]> = BTreeMap::new();
        for r in &c.rows {
            let seen = trial.entry(r.backend.as_str()).or_default();
            if r.verdict == Verdict::Regressed {
                seen[0] |= r.metric == Metric::Throughput;
                seen[1] |= r.metric == Metric::AcquireP99;
                seen[2] = true;
            }
        }
        for (backend, seen) in trial {
            let count = caught.entry(backend.to_string()).or_default();
            for (n, hit) in count.iter_mut().zip(seen) {
                *n += usize::from(hit);
            }
        }
    }
    let (before, after) = (spread(plain), spread(slowed));
    let change = |backend: &str, m: Metric| {
        let mean = |s: &[crate::noise::Spread]| {
            s.iter()
                .find(|x| x.backend == backend && x.metric == m)
                .map(|x| x.mean)
        };
        match (mean(&before), mean(&after)) {
            (Some(b), Some(a)) if b > 0.0 => Some(a / b - 1.0),
            _ => None,
        }
    };
    let injected = |backend: &str| {
        slowed
            .iter()
            .flat_map(|(_, r)| &r.results)
            .find(|r| r.backend == backend)
            .and_then(|r| r.injected_slowdown_ms)
    };
    Ok(caught
        .into_iter()
        .filter(|(backend, _)| injected(backend).is_some())
        .map(
            |(backend, [caught_throughput, caught_p99, caught])| Caught {
                injected_ms: injected(&backend),
                throughput_change: change(&backend, Metric::Throughput),
                p99_change: change(&backend, Metric::AcquireP99),
                backend,
                caught_throughput,
                caught_p99,
                caught,
                trials,
            },
        )
        .collect())
}

/// The counts as Markdown: per backend, the delay, what it did to throughput and p99, and how
/// often the gate caught it.
pub fn markdown(rows: &[Caught], rounds: usize) -> String {
    let pct =
        |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{:+.0}%", x * 100.0));
    let mut s = format!(
        "\nThe injected slowdown, caught by the gate of {rounds} run(s) a side (seeded draws of the \
         runs; trials share runs): each figure's change, and in how many gates it was called \
         regressed\n\n| backend | slowdown | throughput | acquire p99 | the gate failed \
         on it |\n|---|---|---|---|---|\n"
    );
    for c in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {}, caught {} of {} | {}, caught {} of {} | {} of {} |",
            c.backend,
            c.injected_ms.map_or_else(
                || "none".to_string(),
                lockbench_results::model::slowdown_label
            ),
            pct(c.throughput_change),
            c.caught_throughput,
            c.trials,
            pct(c.p99_change),
            c.caught_p99,
            c.trials,
            c.caught,
            c.trials
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of scenario `t` with etcd-lease at `throughput` acq/s, slowed by `slowdown_ms`.
    fn run(throughput: f64, slowdown_ms: Option<f64>) -> RunResults {
        let mut r = crate::fixtures::run("t", &[("etcd-lease", throughput)]);
        r.results[0].injected_slowdown_ms = slowdown_ms;
        r
    }

    fn runs(throughputs: &[f64], slowdown_ms: Option<f64>) -> Vec<(String, RunResults)> {
        throughputs
            .iter()
            .enumerate()
            .map(|(i, &t)| (format!("r{i}"), run(t, slowdown_ms)))
            .collect()
    }

    #[test]
    fn a_clear_slowdown_is_caught_in_every_trial_and_none_in_none() {
        let plain = runs(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0], None);
        let slowed = runs(&[800.0, 805.0, 795.0, 810.0, 790.0, 800.0], Some(0.3));
        let caught = power(&plain, &slowed, 3, 10, &Config::default()).unwrap();
        assert_eq!(caught.len(), 1);
        let c = &caught[0];
        assert_eq!(
            (c.backend.as_str(), c.caught, c.trials),
            ("etcd-lease", 10, 10)
        );
        assert_eq!(c.injected_ms, Some(0.3));
        assert!((c.throughput_change.unwrap() + 0.2).abs() < 0.01, "{c:?}");
        // The same runs on both sides: nothing to catch.
        let same = runs(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0], Some(0.3));
        let none = power(&plain, &same, 3, 10, &Config::default()).unwrap();
        assert_eq!(none[0].caught, 0, "{none:?}");
        let table = markdown(&caught, 3);
        assert!(
            table.contains(
                "| etcd-lease | 0.3 ms | -20%, caught 10 of 10 | n/a, caught 0 of 10 | 10 of 10 |"
            ),
            "{table}"
        );
    }

    #[test]
    fn too_few_runs_for_the_rounds_are_refused() {
        let plain = runs(&[1000.0, 1010.0], None);
        let e = power(&plain, &plain, 3, 5, &Config::default()).unwrap_err();
        assert!(e.contains("at least 3"), "{e}");
    }
}
