//! The fault schedule: the scenario's `[[faults]]` turned into a timeline, deterministically.
//!
//! A schedule is a generator like a client's plan: data in, a list of timed actions out, every
//! random choice drawn from an RNG seeded from the scenario seed and the entry's index. So the
//! same seed always gives the same faults at the same offsets (the nemesis may still *resolve*
//! a target like "the leader" differently, since that depends on the cluster at the time), and
//! the timeline can be printed and tested without running anything.
//!
//! Times are offsets from the start of the measured window. Every fault with a `duration` gets
//! its inverse ([`Fault::inverse`]: `partition` / `link-*` -> `heal`, `pause` -> `resume`,
//! `kill` -> `start`);
//! at the end of the fault phase (`duration`) a final `heal`, `resume all` and `start all` are
//! appended, after which the run continues for the scenario's `recovery` period.

use lockbench_core::scenario::FaultSpec;
use lockbench_core::{Fault, Seed, Stream, Targets};
use rand::Rng;
use std::time::Duration;

/// One action of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Offset from the start of the measured window.
    pub at: Duration,
    /// What to do.
    pub fault: Fault,
    /// Index of the `[[faults]]` entry it comes from (`None` for the final heal).
    pub entry: Option<usize>,
}

/// The timeline of `specs` over a fault phase of length `phase`, seeded from `seed`.
pub fn plan(specs: &[FaultSpec], seed: u64, phase: Duration) -> Vec<Step> {
    let mut steps = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let mut rng = Seed(seed).rng(Stream::Faults(i));
        let mut push = |start: Duration| {
            if start >= phase {
                return;
            }
            steps.push(Step {
                at: start,
                fault: spec.fault.clone(),
                entry: Some(i),
            });
            if let (Some(d), Some(undo)) = (spec.duration, spec.fault.inverse()) {
                steps.push(Step {
                    at: (start + d).min(phase),
                    fault: undo,
                    entry: Some(i),
                });
            }
        };
        match (spec.at, spec.every) {
            (Some(at), _) => push(at),
            (None, Some(every)) if !every.is_zero() => {
                let length = spec.duration.unwrap_or(every / 2);
                let jitter = spec.every_jitter.unwrap_or(every.saturating_sub(length));
                let mut period = Duration::ZERO;
                while period < phase {
                    // Every period that starts inside the phase gets its window: in the last,
                    // partial one the offset is drawn from what is left of the phase, so no
                    // window falls after the end and silently never happens.
                    let room = (phase - period).saturating_sub(Duration::from_nanos(1));
                    let offset = jitter.min(room).mul_f64(rng.random::<f64>());
                    push(period + offset);
                    period += every;
                }
            }
            _ => {}
        }
    }
    steps.sort_by_key(|s| s.at);
    for fault in [
        Fault::Heal,
        Fault::Resume {
            targets: Targets::All,
        },
        Fault::Start {
            targets: Targets::All,
        },
    ] {
        steps.push(Step {
            at: phase,
            fault,
            entry: None,
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{FaultKind, Scenario};

    fn scenario(seed: u64) -> Scenario {
        let text = r#"
name = "t"
backends = ["zk-fair"]
duration = "60s"
[workload]
clients = 2
keys = 1
[[faults]]
fault = "partition"
split = { isolate = "leader" }
every = "10s"
duration = "3s"
[[faults]]
fault = "pause"
targets = "holder"
every = "7s"
duration = "2s"
[[faults]]
fault = "kill"
targets = "one"
at = "20s"
duration = "5s"
"#;
        Scenario::load("t", text, &[format!("seed={seed}")]).unwrap()
    }

    #[test]
    fn the_same_seed_yields_the_same_fault_schedule() {
        let a = scenario(7);
        let b = scenario(7);
        let plan_a = plan(&a.faults, a.seed, a.duration);
        assert_eq!(plan_a, plan(&b.faults, b.seed, b.duration));
        let c = scenario(8);
        assert_ne!(
            plan_a,
            plan(&c.faults, c.seed, c.duration),
            "another seed must move the jittered windows"
        );
    }

    /// Regression: a repeating entry's window whose seeded start fell after the end of
    /// the fault phase was dropped without a word. Every period that starts inside the phase
    /// now has its window, whatever the seed.
    #[test]
    fn every_period_inside_the_phase_gets_its_window() {
        for seed in 0..200 {
            let text = r#"
name = "t"
backends = ["zk-fair"]
duration = "120s"
[workload]
clients = 2
keys = 1
[[faults]]
fault = "link-delay"
targets = "one"
latency = "200ms"
every = "50s"
every_jitter = "45s"
duration = "5s"
"#;
            let s = Scenario::load("t", text, &[format!("seed={seed}")]).unwrap();
            let starts: Vec<Duration> = plan(&s.faults, s.seed, s.duration)
                .into_iter()
                .filter(|st| st.fault.kind() == FaultKind::LinkDelay)
                .map(|st| st.at)
                .collect();
            assert_eq!(
                starts.len(),
                3,
                "seed {seed}: periods at 0, 50 and 100 s: {starts:?}"
            );
            assert!(starts[2] < s.duration, "seed {seed}: {starts:?}");
        }
    }

    #[test]
    fn windows_stay_inside_their_period_and_end_with_a_full_heal() {
        let s = scenario(3);
        let steps = plan(&s.faults, s.seed, s.duration);
        let partitions: Vec<_> = steps
            .iter()
            .filter(|st| st.entry == Some(0) && st.fault.kind() == FaultKind::Partition)
            .collect();
        assert_eq!(partitions.len(), 6, "one per 10 s period over 60 s");
        for (k, p) in partitions.iter().enumerate() {
            let start = Duration::from_secs(10 * k as u64);
            assert!(
                p.at >= start && p.at <= start + Duration::from_secs(7),
                "{p:?}"
            );
        }
        let kill = steps
            .iter()
            .find(|st| st.fault.kind() == FaultKind::Kill)
            .unwrap();
        assert_eq!(kill.at, Duration::from_secs(20));
        assert!(
            steps
                .iter()
                .any(|st| st.fault.kind() == FaultKind::Start && st.at == Duration::from_secs(25))
        );
        let tail: Vec<_> = steps[steps.len() - 3..]
            .iter()
            .map(|s| s.fault.kind())
            .collect();
        assert_eq!(tail, [FaultKind::Heal, FaultKind::Resume, FaultKind::Start]);
        assert!(steps.windows(2).all(|w| w[0].at <= w[1].at));
    }
}
