//! Noise thresholds and the significance level, from defaults, a TOML file and flags.
//!
//! ```toml
//! significance = 0.05      # the comparison's false-alarm rate: the cut for Welch's test's
//!                          # Benjamini–Hochberg adjusted p-values, with repetitions on both sides
//! latency_floor_us = 50    # latency changes smaller than this (absolute) are noise
//! [thresholds]             # relative change that counts, per metric
//! throughput = 0.15
//! acquire_p50 = 0.20
//! acquire_p90 = 0.25
//! acquire_p99 = 0.35
//! handoff_p50 = 0.25
//! handoff_p99 = 0.40
//! [backends.etcd-lease]    # one backend's own, over the above: what `lockbench noise
//! throughput = 0.32        # --calibrate` writes from that backend's measured spread
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A compared figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Acquisitions per second (higher is better).
    Throughput,
    /// Acquire latency median, µs.
    AcquireP50,
    /// Acquire latency 90th percentile, µs.
    AcquireP90,
    /// Acquire latency 99th percentile, µs.
    AcquireP99,
    /// Hand-off latency median, µs.
    HandoffP50,
    /// Hand-off latency 99th percentile, µs.
    HandoffP99,
    /// Safety damage (violations); any new damage is a regression.
    Safety,
    /// Whether the backend ran (`ok`) at all.
    Status,
}

impl Metric {
    /// The numeric metrics, in report order.
    pub const NUMERIC: [Metric; 6] = [
        Metric::Throughput,
        Metric::AcquireP50,
        Metric::AcquireP90,
        Metric::AcquireP99,
        Metric::HandoffP50,
        Metric::HandoffP99,
    ];

    /// Name as used in config files, flags and output.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::AcquireP50 => "acquire_p50",
            Metric::AcquireP90 => "acquire_p90",
            Metric::AcquireP99 => "acquire_p99",
            Metric::HandoffP50 => "handoff_p50",
            Metric::HandoffP99 => "handoff_p99",
            Metric::Safety => "safety",
            Metric::Status => "status",
        }
    }

    /// Parses [`Metric::name`].
    pub fn parse(s: &str) -> Option<Metric> {
        Metric::NUMERIC
            .into_iter()
            .chain([Metric::Safety, Metric::Status])
            .find(|m| m.name() == s)
    }

    /// `true` when larger values are better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }

    /// `true` for latencies (µs).
    pub fn is_latency(self) -> bool {
        !matches!(self, Metric::Throughput | Metric::Safety | Metric::Status)
    }

    /// Default noise threshold (relative change) for a noisy 2-core machine.
    pub fn default_threshold(self) -> f64 {
        match self {
            Metric::Throughput => 0.15,
            Metric::AcquireP50 => 0.20,
            Metric::AcquireP90 => 0.25,
            Metric::AcquireP99 => 0.35,
            Metric::HandoffP50 => 0.25,
            Metric::HandoffP99 => 0.40,
            Metric::Safety | Metric::Status => 0.0,
        }
    }
}

/// How sure a verdict must be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The false-alarm rate of a whole comparison: a tested change counts when its
    /// Benjamini–Hochberg adjusted p-value is below it (when both sides have repetitions).
    pub significance: f64,
    /// Absolute latency change (µs) below which a latency change is noise.
    pub latency_floor_us: f64,
    /// Relative noise threshold per metric name; missing metrics use the defaults.
    pub thresholds: BTreeMap<String, f64>,
    /// Per backend name, thresholds of its own (metric name to fraction) that take the
    /// place of `thresholds` for that backend: a backend whose figures vary more from run to
    /// run than another's needs a wider band to keep the comparison's false alarms rare.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub backends: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            significance: 0.05,
            latency_floor_us: 50.0,
            thresholds: Metric::NUMERIC
                .iter()
                .map(|m| (m.name().to_string(), m.default_threshold()))
                .collect(),
            backends: BTreeMap::new(),
        }
    }
}

impl Config {
    /// Defaults overridden by a TOML file's fields.
    pub fn from_toml(text: &str) -> Result<Config, String> {
        let mut parsed: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut full = Config::default();
        for (k, v) in std::mem::take(&mut parsed.thresholds) {
            full.set_threshold(&k, v)?;
        }
        parsed.thresholds = full.thresholds;
        for (backend, own) in &parsed.backends {
            for (metric, &value) in own {
                check_threshold(metric, value).map_err(|e| format!("[backends.{backend}]: {e}"))?;
            }
        }
        parsed.validate()?;
        Ok(parsed)
    }

    /// Sets one metric's threshold (a fraction: 0.15 = ±15 %).
    pub fn set_threshold(&mut self, metric: &str, value: f64) -> Result<(), String> {
        let m = check_threshold(metric, value)?;
        self.thresholds.insert(m.name().to_string(), value);
        Ok(())
    }

    /// Applies a `METRIC=FRACTION` flag (`throughput=0.2`; `20%` also accepted).
    pub fn set_from_flag(&mut self, flag: &str) -> Result<(), String> {
        let (k, v) = flag
            .split_once('=')
            .ok_or_else(|| format!("`{flag}`: expected METRIC=FRACTION, e.g. acquire_p99=0.5"))?;
        let v = v.trim();
        let value = match v.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
            None => v.parse::<f64>(),
        }
        .map_err(|e| format!("`{flag}`: {e}"))?;
        self.set_threshold(k.trim(), value)
    }

    /// The threshold of `metric`.
    pub fn threshold(&self, metric: Metric) -> f64 {
        self.thresholds
            .get(metric.name())
            .copied()
            .unwrap_or_else(|| metric.default_threshold())
    }

    /// The threshold of `metric` for `backend`: its own when the file gives one, else
    /// [`Config::threshold`].
    pub fn threshold_for(&self, backend: &str, metric: Metric) -> f64 {
        self.backends
            .get(backend)
            .and_then(|own| own.get(metric.name()))
            .copied()
            .unwrap_or_else(|| self.threshold(metric))
    }

    fn validate(&self) -> Result<(), String> {
        if !(self.significance > 0.0 && self.significance < 1.0) {
            return Err(format!(
                "significance must be in (0, 1), got {}",
                self.significance
            ));
        }
        if self.latency_floor_us.is_nan() || self.latency_floor_us < 0.0 {
            return Err("latency_floor_us must be >= 0".into());
        }
        Ok(())
    }
}

/// The metric named `metric`, when `value` can be its threshold.
fn check_threshold(metric: &str, value: f64) -> Result<Metric, String> {
    let m = Metric::parse(metric)
        .filter(|m| Metric::NUMERIC.contains(m))
        .ok_or_else(|| {
            format!(
                "unknown metric `{metric}`; known: {}",
                Metric::NUMERIC.map(Metric::name).join(", ")
            )
        })?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!(
            "threshold for {metric} must be a fraction >= 0, got {value}"
        ));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_and_flags_override_defaults() {
        let mut c =
            Config::from_toml("significance = 0.01\n[thresholds]\nacquire_p99 = 0.5\n").unwrap();
        assert_eq!(c.significance, 0.01);
        assert_eq!(c.threshold(Metric::AcquireP99), 0.5);
        assert_eq!(c.threshold(Metric::Throughput), 0.15);
        c.set_from_flag("throughput=20%").unwrap();
        assert!((c.threshold(Metric::Throughput) - 0.2).abs() < 1e-12);
        assert!(c.set_from_flag("p42=1").is_err());
        assert!(Config::from_toml("[thresholds]\nbogus = 1\n").is_err());
        assert!(Config::from_toml("nonsense = 1\n").is_err());
    }
}
