//! The `[sweep]` table of a scenario: what `lockbench sweep` varies and what it calls
//! sustainable, so a built-in sizing scenario (`capacity`) runs with no flags and a sweep can be
//! repeated exactly from the `scenario.toml` it leaves behind.
//!
//! It is data only; the knee search that uses it lives in `lockbench-capacity`. Every field
//! has a default and every one can be overridden on the command line (`--vary`, `--rates`,
//! `--slo`, ...), which replaces the scenario's value.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How `lockbench sweep` runs a scenario (ignored by `lockbench run`).
///
/// TOML:
/// ```toml
/// [sweep]
/// vary = ["workload.keys=1,16,256"]   # a grid: the product of every list
/// rates = "auto"                       # or [100.0, 200.0, 400.0]
/// slo_p99 = "50ms"
/// tolerance = 0.05                     # achieved must be >= (1 - tolerance) x offered
/// resolution = 0.1                     # bisect until hi / lo <= 1 + resolution
/// step = "1500ms"                      # measured length of each step
/// step_warmup = "500ms"
/// max_steps = 10                       # per grid point, the closed-loop probe included
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepSpec {
    /// Grid dimensions, each `path=v1,v2,...` with a `--set` path.
    pub vary: Vec<String>,
    /// Offered rates (acquisitions/s over all clients): `"auto"` (a closed-loop probe, then a
    /// geometric ramp and a bisection), or an explicit ascending list.
    pub rates: Rates,
    /// The latency objective: p99 acquire latency from the intended start.
    #[serde(with = "humantime_serde")]
    pub slo_p99: Duration,
    /// A step is sustained only if its achieved rate is at least `(1 - tolerance)` x offered.
    pub tolerance: f64,
    /// A step is failed when more than this fraction of its acquires failed or timed out.
    pub max_error_rate: f64,
    /// The bisection stops when the lowest failing rate is within `1 + resolution` of the
    /// highest sustained one.
    pub resolution: f64,
    /// Measured length of each step.
    #[serde(with = "humantime_serde")]
    pub step: Duration,
    /// Warm-up of each step (not measured).
    #[serde(with = "humantime_serde")]
    pub step_warmup: Duration,
    /// At most this many steps per grid point, the closed-loop probe included.
    pub max_steps: u32,
}

/// Offered rates of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rates {
    /// `"auto"`: probe, ramp, bisect.
    Auto(String),
    /// These rates, ascending.
    List(Vec<f64>),
}

impl Default for SweepSpec {
    fn default() -> SweepSpec {
        SweepSpec {
            vary: Vec::new(),
            rates: Rates::Auto("auto".into()),
            slo_p99: Duration::from_millis(50),
            tolerance: 0.05,
            max_error_rate: 0.01,
            resolution: 0.1,
            step: Duration::from_millis(1500),
            step_warmup: Duration::from_millis(500),
            max_steps: 10,
        }
    }
}

impl SweepSpec {
    /// Checks values that parse but cannot work; errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        if let Rates::Auto(s) = &self.rates
            && s != "auto"
        {
            return Err(format!(
                "sweep.rates: expected \"auto\" or a list of rates, got \"{s}\""
            ));
        }
        if let Rates::List(l) = &self.rates
            && (l.is_empty() || l.iter().any(|r| !(r.is_finite() && *r > 0.0)))
        {
            return Err("sweep.rates: list positive acquisitions/s, e.g. [100, 200]".into());
        }
        for (field, v, hi) in [
            ("sweep.tolerance", self.tolerance, 1.0),
            ("sweep.max_error_rate", self.max_error_rate, 1.0),
            ("sweep.resolution", self.resolution, 10.0),
        ] {
            if !(v.is_finite() && v > 0.0 && v < hi) {
                return Err(format!("{field}: must be above 0 and below {hi}, got {v}"));
            }
        }
        if self.slo_p99.is_zero() {
            return Err("sweep.slo_p99: must be above zero".into());
        }
        if self.step.is_zero() {
            return Err("sweep.step: must be above zero".into());
        }
        if self.max_steps < 2 {
            return Err("sweep.max_steps: must be at least 2".into());
        }
        for v in &self.vary {
            parse_vary(v)?;
        }
        Ok(())
    }
}

/// Splits `path=v1,v2,...` into the path and its values; errors name the argument.
pub fn parse_vary(spec: &str) -> Result<(String, Vec<String>), String> {
    let (path, values) = spec.split_once('=').ok_or_else(|| {
        format!("--vary {spec}: expected path=v1,v2,... (e.g. workload.keys=1,16)")
    })?;
    let path = path.trim();
    if path.is_empty() {
        return Err(format!("--vary {spec}: the path before `=` is empty"));
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!("--vary {spec}: list at least one value after `=`"));
    }
    Ok((path.to_string(), values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_parses_and_names_bad_input() {
        assert_eq!(
            parse_vary("workload.keys=1, 16,256").unwrap(),
            (
                "workload.keys".into(),
                vec!["1".into(), "16".into(), "256".into()]
            )
        );
        assert!(
            parse_vary("workload.keys")
                .unwrap_err()
                .contains("workload.keys")
        );
        assert!(parse_vary("=1").is_err());
        assert!(parse_vary("a=").is_err());
    }

    #[test]
    fn spec_reads_from_toml_with_defaults() {
        let s: SweepSpec =
            toml::from_str("vary = [\"workload.keys=1,16\"]\nrates = [10.0, 20.0]").unwrap();
        assert_eq!(s.rates, Rates::List(vec![10.0, 20.0]));
        assert_eq!(s.slo_p99, Duration::from_millis(50));
        s.validate().unwrap();
        let bad: SweepSpec = toml::from_str("rates = \"fast\"").unwrap();
        assert!(bad.validate().unwrap_err().contains("sweep.rates"));
    }
}
