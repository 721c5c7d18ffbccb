//! `lockbench run --repeat N`: runs a backend N times in a row so `lockbench compare` has N
//! samples to test for significance. Repetition 1 is the run the result describes in full
//! (history, histograms, report); repetitions 2..N run with seed + k - 1 into
//! `repeats/<backend>-<k>/` inside the run directory (each with its own history and `results.json`),
//! and every repetition's key figures land in the result's `repetitions` array.

use crate::progress::Progress;
use lockbench_core::Scenario;
use lockbench_report::model::Repetition;
use lockbench_report::{BackendResult, RunDir, RunResults};
use lockbench_workloads::RunControl;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs repetitions 2..=`n` of `first`'s backend with `run_once` and records them all in
/// `first.repetitions`. Stops early when interrupted; a failed repetition is recorded with
/// its status (compare ignores it) and does not stop the others.
#[allow(clippy::too_many_arguments)]
pub async fn more<F, Fut>(
    first: &mut BackendResult,
    n: u32,
    scenario: &Scenario,
    run_dir: &RunDir,
    quiet: bool,
    interrupted: &AtomicBool,
    current: &Mutex<Option<RunControl>>,
    mut run_once: F,
) where
    F: FnMut(Scenario, RunDir, RunControl) -> Fut,
    Fut: Future<Output = anyhow::Result<BackendResult>>,
{
    if n <= 1 {
        return;
    }
    first.repetitions = vec![Repetition::of(first)];
    for k in 2..=n {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        let mut s = scenario.clone();
        s.seed = scenario.seed.wrapping_add(u64::from(k) - 1);
        let dir = match RunDir::create(
            run_dir.path(),
            &s.name,
            Some(
                &run_dir
                    .path()
                    .join("repeats")
                    .join(format!("{}-{k}", first.backend)),
            ),
        ) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("warning: repetition {k}: {e:#}");
                break;
            }
        };
        let _ = dir.write_scenario(&s.to_toml());
        let control = RunControl::new(s.workload.clients);
        *current.lock().expect("control lock") = Some(control.clone());
        let label = format!("{} #{k}/{n}", first.backend);
        let progress = Progress::start(
            &label,
            s.warmup + s.duration,
            s.stall_alarm,
            control.clone(),
            quiet,
        );
        let rep = match run_once(s.clone(), dir.clone(), control).await {
            Ok(r) => {
                progress.finish(format!(
                    "{:.0} acq/s, safety {}",
                    r.throughput_per_s, r.safety.verdict
                ));
                let _ = dir.write_results(&single(&s, &r));
                Repetition::of(&r)
            }
            Err(e) => {
                progress.finish(format!("error: {e:#}"));
                Repetition {
                    status: "error".into(),
                    throughput_per_s: 0.0,
                    acquire_latency_us: None,
                    handoff_latency_us: None,
                    violations: 0,
                    verdict: "unknown".into(),
                }
            }
        };
        first.repetitions.push(rep);
    }
}

/// A minimal `results.json` for one repetition's directory.
fn single(s: &Scenario, r: &BackendResult) -> RunResults {
    RunResults {
        schema_version: lockbench_report::SCHEMA_VERSION,
        scenario: s.name.clone(),
        seed: s.seed,
        started_at: String::new(),
        complete: true,
        cluster: String::new(),
        environment: lockbench_report::environment::detect(Default::default()),
        results: vec![r.clone()],
        scorecard: None,
        capacity: None,
    }
}
