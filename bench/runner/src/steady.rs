//! The warm-up that brings a lock backend to steady state before it is measured
//! (`[steady]`, the rule in [`lockbench_core::steady`]): rounds of the scenario's own
//! workload, one after another, until successive rounds agree or `max` has passed.
//!
//! A round is an ordinary run of one backend (the same path as every run, so it warms the
//! same clients, connections and server code paths), shortened to `round`, without faults,
//! the server-side observer or expectations. Only its figures are kept, in the backend's
//! result; its history is written to a scratch directory removed after the round.

use crate::runner::{Runner, Unit};
use lockbench_core::steady::{Round, Steady};
use lockbench_core::{BackendKind, Scenario};
use lockbench_report::RunDir;
use lockbench_results::model::SteadyWarmup;
use lockbench_results::{BackendResult, Status};
use std::time::{Duration, Instant};

/// The scenario one warm-up round of `kind` runs.
fn round_scenario(scenario: &Scenario, kind: BackendKind) -> Scenario {
    let mut s = scenario.clone();
    s.backends = vec![kind];
    s.duration = scenario.steady.round;
    s.warmup = Duration::ZERO;
    s.steady = Steady::default();
    s.faults.clear();
    s.observe_server = false;
    s.expect = Default::default();
    s.workload.acquisitions = None;
    s
}

impl Runner {
    /// Runs warm-up rounds of `kind` until they settle, `max` passes, a round fails or Ctrl-C
    /// is pressed; tells the observer after each round and, unless Ctrl-C ended it (the run
    /// stops then), at the end. A failed round's result comes back
    /// too: the measured run would fail the same way (unreachable servers, a broken adapter),
    /// so it stands for the backend's result instead of a second wait for the same error.
    pub(crate) async fn warm_up(
        &self,
        kind: BackendKind,
        scenario: &Scenario,
        run_dir: &RunDir,
    ) -> (SteadyWarmup, Option<BackendResult>) {
        let spec = &scenario.steady;
        let round = round_scenario(scenario, kind);
        let scratch = run_dir.path().join("steady").join(kind.name());
        let started = Instant::now();
        let mut failed = None;
        let mut warmup = SteadyWarmup {
            settled: false,
            seconds: 0.0,
            rounds: Vec::new(),
            error: None,
        };
        loop {
            let dir = match RunDir::create(run_dir.path(), &round.name, Some(&scratch)) {
                Ok(d) => d,
                Err(e) => {
                    warmup.error = Some(format!("{e:#}"));
                    break;
                }
            };
            let result = self.run_quietly(Unit::Lock(kind), &round, &dir).await;
            let _ = std::fs::remove_dir_all(&scratch);
            if self.interrupted() {
                break;
            }
            if result.status != Status::Ok {
                warmup.error = Some(format!(
                    "warm-up round {} failed: {}",
                    warmup.rounds.len() + 1,
                    result.error.as_deref().unwrap_or("no error given")
                ));
                failed = Some(result);
                break;
            }
            warmup.rounds.push(Round {
                throughput_per_s: result.throughput_per_s,
                acquire_p50_us: result.acquire_latency_us.as_ref().map_or(0, |p| p.p50),
            });
            warmup.settled = spec.settled(&warmup.rounds);
            warmup.seconds = started.elapsed().as_secs_f64();
            self.observer().warming(kind.name(), &warmup, spec);
            // Another round would end past `max`: stop here.
            if warmup.settled || started.elapsed() + spec.round > spec.max {
                break;
            }
        }
        let _ = std::fs::remove_dir(run_dir.path().join("steady"));
        warmup.seconds = started.elapsed().as_secs_f64();
        if !self.interrupted() {
            self.observer().warmed(kind.name(), &warmup, spec);
        }
        (warmup, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_the_workload_alone_for_one_round() {
        let mut s = Scenario::load(
            "test",
            r#"
name = "s"
backends = ["redis-setnx", "zk-fair"]
duration = "30s"
warmup = "2s"
observe_server = true
[workload]
clients = 8
keys = 2
[steady]
max = "20s"
round = "500ms"
[[faults]]
fault = "pause"
targets = "leader"
at = "1s"
duration = "1s"
"#,
            &[],
        )
        .expect("a valid scenario");
        // A scenario that stops by count (with no faults) gives its rounds a length too.
        s.workload.acquisitions = Some(1000);
        let r = round_scenario(&s, BackendKind::of("zk-fair"));
        assert_eq!(r.backends.len(), 1);
        assert_eq!(r.backends[0].name(), "zk-fair");
        assert_eq!(r.duration, Duration::from_millis(500));
        assert_eq!(r.warmup, Duration::ZERO);
        assert!(r.faults.is_empty() && !r.observe_server);
        assert_eq!(r.workload.acquisitions, None);
        assert_eq!((r.workload.clients, r.workload.keys), (8, 2));
        assert!(!r.steady.enabled(), "a round does not warm itself up");
        r.validate().expect("a round is a valid scenario");
    }
}
