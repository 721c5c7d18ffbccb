//! Several runs of one scenario read as one, each run's result a repetition: how a gate
//! compares a baseline and a candidate run in turns (A B A B ...) on the same machine, so
//! the machine's drift over the evening falls on both sides alike instead of on one.
//!
//! The merged run is the first run with, for each (backend, workload), the repetitions of
//! every run that has it: a run made with `--repeat N` gives its N, a single run itself.
//! [`crate::compare`] then tests the sides' repetitions against each other as it does for
//! `--repeat`.

use lockbench_results::RunResults;
use lockbench_results::model::Repetition;

/// `runs` as one run of their scenario. An error names the first run whose scenario differs
/// (repetitions of different scenarios are no samples of one figure).
pub fn merge(runs: &[(String, RunResults)]) -> Result<RunResults, String> {
    let Some(((first_name, first), rest)) = runs.split_first() else {
        return Err("nothing to merge: give at least one run".into());
    };
    if let Some((name, other)) = rest.iter().find(|(_, r)| r.scenario != first.scenario) {
        return Err(format!(
            "{name} ran scenario `{}`, {first_name} ran `{}`: only runs of one scenario merge",
            other.scenario, first.scenario
        ));
    }
    let mut merged = first.clone();
    merged.complete = runs.iter().all(|(_, r)| r.complete);
    for result in &mut merged.results {
        result.repetitions = runs
            .iter()
            .filter_map(|(_, r)| {
                r.results
                    .iter()
                    .find(|x| x.backend == result.backend && x.workload == result.workload)
            })
            .flat_map(|x| {
                if x.repetitions.is_empty() {
                    vec![Repetition::of(x)]
                } else {
                    x.repetitions.clone()
                }
            })
            .collect();
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_results::Status;

    use crate::fixtures::run;

    /// Each run is a repetition; a backend missing from one run has the others'.
    #[test]
    fn each_run_becomes_a_repetition() {
        let runs = [
            (
                "a1".to_string(),
                run("nightly", &[("zk-fair", 100.0), ("redlock", 5.0)]),
            ),
            ("a2".to_string(), run("nightly", &[("zk-fair", 110.0)])),
            (
                "a3".to_string(),
                run("nightly", &[("zk-fair", 90.0), ("redlock", 7.0)]),
            ),
        ];
        let m = merge(&runs).unwrap();
        let reps = |i: usize| -> Vec<f64> {
            m.results[i]
                .repetitions
                .iter()
                .map(|r| r.throughput_per_s)
                .collect()
        };
        assert_eq!(reps(0), [100.0, 110.0, 90.0]);
        assert_eq!(reps(1), [5.0, 7.0]);
        assert!(
            m.results[0]
                .repetitions
                .iter()
                .all(|r| r.status == Status::Ok)
        );
    }

    #[test]
    fn runs_of_different_scenarios_do_not_merge() {
        let runs = [
            ("a".to_string(), run("nightly", &[("zk-fair", 1.0)])),
            ("b".to_string(), run("quick", &[("zk-fair", 1.0)])),
        ];
        let e = merge(&runs).unwrap_err();
        assert!(e.contains("b ran scenario `quick`, a ran `nightly`"), "{e}");
        assert!(merge(&[]).is_err());
    }
}
