//! The slowdown injected on purpose (`workload.slowdown`), to measure what the regression gate
//! catches: every client waits this long inside each acquire, after the lock is granted and
//! before the acquire returns, holding the lock meanwhile. A slower grant does the same to a
//! contended key: the throughput falls and the acquire latency rises. Waited before the
//! request instead, it would hide behind the other clients' turns on a hot key.
//!
//! One delay for every backend (`slowdown = "2ms"`), or one per backend
//! (`slowdown = { redis-setnx = "300us", etcd-lease = "1ms" }`, or
//! `--set workload.slowdown.redis-setnx=300us`): the same share of throughput is a different
//! delay for a backend that grants 10,000 times a second and one that grants 100 times. The
//! runner resolves it for each backend before the run ([`crate::Scenario::for_backend`]), so
//! the clients and the results see one delay.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// `workload.slowdown`: one delay for every backend, or one per backend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Slowdown {
    /// Every backend's clients wait this long.
    Every(#[serde(with = "humantime_serde")] Duration),
    /// Each named backend's clients wait its own; a backend not named waits nothing.
    PerBackend(BTreeMap<String, humantime_serde::Serde<Duration>>),
}

impl Slowdown {
    /// The delay `backend`'s clients wait, if any.
    pub fn for_backend(&self, backend: &str) -> Option<Duration> {
        match self {
            Slowdown::Every(d) => Some(*d),
            Slowdown::PerBackend(m) => m.get(backend).map(|d| **d),
        }
    }

    /// The delay when it is one for every backend (what the runner hands the clients).
    pub fn fixed(&self) -> Option<Duration> {
        match self {
            Slowdown::Every(d) => Some(*d),
            Slowdown::PerBackend(_) => None,
        }
    }

    /// Every delay above zero and below `acquire_timeout`, every backend named one of
    /// `backends`: the problem, if not.
    pub fn validate(&self, backends: &[&str], acquire_timeout: Duration) -> Result<(), String> {
        let delays: Vec<(Option<&str>, Duration)> = match self {
            Slowdown::Every(d) => vec![(None, *d)],
            Slowdown::PerBackend(m) => m.iter().map(|(b, d)| (Some(b.as_str()), **d)).collect(),
        };
        if delays.is_empty() {
            return Err("names no backend (leave it out for none)".into());
        }
        for (backend, d) in delays {
            if let Some(b) = backend
                && !backends.contains(&b)
            {
                return Err(format!(
                    "`{b}` is not one of the scenario's backends ({})",
                    backends.join(", ")
                ));
            }
            if d.is_zero() || d >= acquire_timeout {
                return Err(
                    "must be above zero and below workload.acquire_timeout (leave it out for none)"
                        .into(),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct W {
        slowdown: Slowdown,
    }

    fn parse(text: &str) -> Slowdown {
        toml::from_str::<W>(text).unwrap().slowdown
    }

    #[test]
    fn one_delay_or_one_per_backend() {
        let every = parse("slowdown = '2ms'");
        assert_eq!(every.for_backend("zk-fair"), Some(Duration::from_millis(2)));
        assert_eq!(every.fixed(), Some(Duration::from_millis(2)));
        let each = parse("slowdown = { redis-setnx = '300us', etcd-lease = '1ms' }");
        assert_eq!(
            each.for_backend("redis-setnx"),
            Some(Duration::from_micros(300))
        );
        assert_eq!(each.for_backend("zk-fair"), None);
        assert_eq!(each.fixed(), None);
    }

    #[test]
    fn a_backend_outside_the_scenario_or_a_zero_delay_is_refused() {
        let timeout = Duration::from_secs(15);
        let each = parse("slowdown = { redis-setnx = '300us' }");
        assert!(each.validate(&["redis-setnx"], timeout).is_ok());
        let e = each
            .validate(&["zk-fair", "etcd-lease"], timeout)
            .unwrap_err();
        assert!(
            e.contains("`redis-setnx`") && e.contains("zk-fair, etcd-lease"),
            "{e}"
        );
        assert!(parse("slowdown = '0ms'").validate(&[], timeout).is_err());
        assert!(parse("slowdown = '20s'").validate(&[], timeout).is_err());
        assert!(parse("slowdown = {}").validate(&[], timeout).is_err());
    }
}
