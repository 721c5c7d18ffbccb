//! The servers' own request counters, and when a difference of two readings means nothing.
//!
//! A run reads each backend's servers' request counters before and after
//! ([`Backend::server_counters`](crate::Backend::server_counters)) and prints the difference
//! beside lockbench's own count, as a cross-check. A difference is a count only if every
//! server kept counting in between: a counter that starts again from zero (a restarted
//! process; a ZooKeeper member that rejoins the ensemble after a partition or a pause, whose
//! statistics are made anew; a Redis `CONFIG RESETSTAT`) makes it too small, or negative, or
//! (restarted early and busy since) plausible but wrong. So every reading keeps each server's
//! own count and, where the server says one, its *incarnation* (what changes when its
//! counters start again: Redis's `run_id`, etcd's process start time, ZooKeeper's uptime), and
//! [`ServerCounters::since`] refuses a difference across a restart, naming the server, instead
//! of returning a figure.

use serde::{Deserialize, Serialize};

/// Requests counted by the servers themselves, for cross-checking lockbench's own count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// Where the count comes from, e.g. "redis INFO commandstats (sum of calls)".
    pub source: String,
    /// The counter's current value, summed over the backend's servers.
    pub requests: u64,
    /// Each server's own reading (empty when a backend cannot tell its servers apart; then
    /// only the sum is checked, for going backwards).
    #[serde(default)]
    pub servers: Vec<ServerCount>,
}

/// One server's counter and incarnation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerCount {
    /// The server as results name it: `zk2 (127.0.0.1:12182)`.
    pub server: String,
    /// Its counter now.
    pub requests: u64,
    /// What changes when its counters start again from zero; `None` when it says nothing of
    /// the kind (then only a counter that went backwards shows a restart).
    pub incarnation: Option<Incarnation>,
}

/// What identifies one life of a server's counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Incarnation {
    /// An identifier the server draws or records when it starts (Redis `run_id`, etcd's
    /// `process_start_time_seconds`): a different one is a restart.
    Id(String),
    /// The counters' age as the server reported it (ZooKeeper `zk_uptime`), and when the
    /// answer arrived on this machine's `CLOCK_MONOTONIC`: the counters started at
    /// `read_at_ms - uptime_ms`, give or take `within_ms` (the request's round trip plus the
    /// uptime's granularity).
    Uptime {
        /// The server's uptime, ms.
        uptime_ms: u64,
        /// `CLOCK_MONOTONIC` when the answer arrived, ms.
        read_at_ms: u64,
        /// How far the start time so computed can be off, ms.
        within_ms: u64,
    },
}

/// How far two monotonic clocks (this machine's and a server's) may drift apart, as a
/// fraction of the time between two readings: 0.1 %, twice NTP's 500 ppm slew limit.
const DRIFT: f64 = 1e-3;

impl Incarnation {
    /// Whether `self`, read later, belongs to a later life than `before`.
    fn restarted_since(&self, before: &Incarnation) -> bool {
        match (before, self) {
            (Incarnation::Id(b), Incarnation::Id(a)) => a != b,
            (
                Incarnation::Uptime {
                    uptime_ms: bu,
                    read_at_ms: br,
                    within_ms: bw,
                },
                Incarnation::Uptime {
                    uptime_ms: au,
                    read_at_ms: ar,
                    within_ms: aw,
                },
            ) => {
                let started_before = *br as i128 - *bu as i128;
                let started_after = *ar as i128 - *au as i128;
                let slack = (bw + aw) as f64 + ar.abs_diff(*br) as f64 * DRIFT;
                (started_after - started_before) as f64 > slack
            }
            // Two kinds of marker cannot be compared: nothing is known.
            _ => false,
        }
    }
}

impl ServerCounters {
    /// The requests the servers counted between `before` and `self`, or why that difference
    /// is not a count: a server whose counters restarted (a different incarnation) or went
    /// backwards, or one read only once. Every such server is named.
    pub fn since(&self, before: &ServerCounters) -> Result<u64, String> {
        let mut reasons = Vec::new();
        for after in &self.servers {
            let Some(b) = before.servers.iter().find(|b| b.server == after.server) else {
                reasons.push(format!("{} was not read before the run", after.server));
                continue;
            };
            let restarted = match (&b.incarnation, &after.incarnation) {
                (Some(b), Some(a)) => a.restarted_since(b),
                _ => false,
            };
            if restarted {
                reasons.push(format!(
                    "{}'s counters restarted during the run",
                    after.server
                ));
            } else if after.requests < b.requests {
                reasons.push(format!(
                    "{}'s counters went backwards during the run ({} before, {} after): \
                     they restarted",
                    after.server, b.requests, after.requests
                ));
            }
        }
        for b in &before.servers {
            if !self.servers.iter().any(|a| a.server == b.server) {
                reasons.push(format!("{} was not read after the run", b.server));
            }
        }
        if reasons.is_empty() && self.requests < before.requests {
            reasons.push(format!(
                "the servers' counters went backwards during the run ({} before, {} after)",
                before.requests, self.requests
            ));
        }
        if reasons.is_empty() {
            Ok(self.requests - before.requests)
        } else {
            Err(reasons.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(servers: &[(&str, u64, Option<Incarnation>)]) -> ServerCounters {
        ServerCounters {
            source: "test".into(),
            requests: servers.iter().map(|s| s.1).sum(),
            servers: servers
                .iter()
                .map(|(name, requests, incarnation)| ServerCount {
                    server: name.to_string(),
                    requests: *requests,
                    incarnation: incarnation.clone(),
                })
                .collect(),
        }
    }

    fn id(s: &str) -> Option<Incarnation> {
        Some(Incarnation::Id(s.into()))
    }

    fn up(uptime_ms: u64, read_at_ms: u64) -> Option<Incarnation> {
        Some(Incarnation::Uptime {
            uptime_ms,
            read_at_ms,
            within_ms: 5,
        })
    }

    #[test]
    fn counts_when_every_server_kept_counting() {
        let before = reading(&[("zk1", 100, up(60_000, 1_000)), ("zk2", 50, None)]);
        let after = reading(&[("zk1", 130, up(80_000, 21_000)), ("zk2", 70, None)]);
        assert_eq!(after.since(&before), Ok(50));
    }

    #[test]
    fn a_counter_that_went_backwards_is_named() {
        let before = reading(&[("zk1", 1521, None), ("zk2", 10, None)]);
        let after = reading(&[("zk1", 1, None), ("zk2", 2000, None)]);
        let err = after.since(&before).unwrap_err();
        assert!(err.contains("zk1's counters went backwards"), "{err}");
        assert!(!err.contains("zk2"), "{err}");
    }

    #[test]
    fn a_restart_that_climbed_past_the_old_value_is_caught_by_its_incarnation() {
        // Redis: a new run_id.
        let before = reading(&[("redis", 10, id("a"))]);
        let after = reading(&[("redis", 500, id("b"))]);
        assert_eq!(
            after.since(&before),
            Err("redis's counters restarted during the run".into())
        );
        // ZooKeeper: 20 s later its uptime is 3 s, so it started 17 s after the first read.
        let before = reading(&[("zk2", 10, up(5_000, 1_000))]);
        let after = reading(&[("zk2", 900, up(3_000, 21_000))]);
        assert!(
            after
                .since(&before)
                .unwrap_err()
                .contains("zk2's counters restarted")
        );
    }

    #[test]
    fn uptime_read_jitter_and_clock_drift_are_not_a_restart() {
        // Started 4 ms "later" by the second read's round trip: within 5 + 5 ms.
        let before = reading(&[("zk1", 10, up(5_000, 1_000))]);
        let after = reading(&[("zk1", 20, up(24_996, 21_000))]);
        assert_eq!(after.since(&before), Ok(10));
        // An hour later, 1 s of drift is within 0.1 %.
        let after = reading(&[("zk1", 20, up(3_604_000, 3_601_000 + 1_000))]);
        assert_eq!(after.since(&before), Ok(10));
    }

    #[test]
    fn a_server_read_only_once_is_named() {
        let before = reading(&[("zk1", 10, None)]);
        let after = reading(&[("zk1", 20, None), ("zk2", 5, None)]);
        assert_eq!(
            after.since(&before),
            Err("zk2 was not read before the run".into())
        );
        assert_eq!(
            before.since(&after),
            Err(
                "zk1's counters went backwards during the run (20 before, 10 after): they \
                 restarted; zk2 was not read after the run"
                    .into()
            )
        );
    }

    #[test]
    fn without_per_server_readings_only_the_sum_is_checked() {
        let before = reading(&[]);
        let mut after = reading(&[]);
        after.requests = 7;
        assert_eq!(after.since(&before), Ok(7));
        assert!(before.since(&after).unwrap_err().contains("went backwards"));
    }
}
