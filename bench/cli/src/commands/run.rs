//! `lockbench run`: load the scenario, make sure servers are there, run each backend, write
//! and print the results. Ctrl-C stops the current backend, keeps everything recorded so far
//! (history, partial `results.json`) and stops a cluster this run started.

use crate::cli::RunArgs;
use crate::placement::RunEnv;
use crate::{builtin, dispatch, progress::Progress};
use anyhow::Context;
use lockbench_cluster::Cluster;
use lockbench_core::{Endpoints, Scenario};
use lockbench_report::{RunDir, RunResults, SCHEMA_VERSION, build, environment, table};
use lockbench_workloads::RunControl;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Runs a scenario.
pub async fn run(args: RunArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let scenario = load_scenario(&args)?;
    let managed = args.cluster == "managed";
    let (endpoints, cluster_label, started_cluster) =
        prepare_cluster(&args.cluster, state_dir.clone()).await?;
    let env = if managed {
        RunEnv::managed(state_dir, &scenario).await?
    } else {
        let mut env = RunEnv::loopback(None);
        env.compose = args.cluster == "compose";
        env
    };
    let outcome = run_scenario(&args, &scenario, &endpoints, &cluster_label, &env).await;
    env.finish().await;
    if let Some(cluster) = started_cluster {
        eprintln!("lockbench: stopping the managed cluster this run started");
        if let Err(e) = cluster.down().await {
            eprintln!("warning: could not stop the managed cluster: {e:#} (run `lockbench down`)");
        }
    }
    outcome
}

async fn run_scenario(
    args: &RunArgs,
    scenario: &Scenario,
    endpoints: &Endpoints,
    cluster_label: &str,
    env: &RunEnv,
) -> anyhow::Result<ExitCode> {
    let run_dir = RunDir::create(Path::new("results"), &scenario.name, args.out.as_deref())?;
    run_dir.write_scenario(&scenario.to_toml())?;
    eprintln!(
        "lockbench: scenario `{}` (seed {}), {} clients on {} key(s), {} per backend after {} warm-up",
        scenario.name,
        scenario.seed,
        scenario.workload.clients,
        scenario.workload.keys,
        humantime::format_duration(scenario.duration),
        humantime::format_duration(scenario.warmup),
    );
    eprintln!("lockbench: results go to {}", run_dir.path().display());
    if crate::placement::uses_workers(scenario) {
        eprintln!("lockbench: worker processes run in {}", env.describe());
    }

    let servers = lockbench_cluster::server_versions(endpoints).await;
    let mut results = RunResults {
        schema_version: SCHEMA_VERSION,
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        complete: false,
        cluster: cluster_label.to_string(),
        environment: environment::detect(servers),
        results: Vec::new(),
        scorecard: None,
    };
    run_dir.write_results(&results)?;

    let interrupted = Arc::new(AtomicBool::new(false));
    let current: Arc<Mutex<Option<RunControl>>> = Arc::new(Mutex::new(None));
    let watcher = {
        let (interrupted, current) = (interrupted.clone(), current.clone());
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "\nlockbench: interrupted; stopping the current backend and saving what was recorded"
                );
                interrupted.store(true, Ordering::SeqCst);
                if let Some(c) = current.lock().expect("control lock").as_ref() {
                    c.stop.send_replace(true);
                }
            }
        })
    };

    let mut any_error = false;
    for &kind in &scenario.backends {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        let control = RunControl::new(scenario.workload.clients);
        *current.lock().expect("control lock") = Some(control.clone());
        let recovery = if scenario.faults.is_empty() {
            std::time::Duration::ZERO
        } else {
            scenario.recovery
        };
        let progress = Progress::start(
            kind.name(),
            scenario.warmup + scenario.duration + recovery,
            scenario.stall_alarm,
            control.clone(),
            args.quiet,
        );
        let result =
            match dispatch::run_backend(kind, scenario, endpoints, &run_dir, control, env).await {
                Ok(r) => {
                    progress.finish(format!(
                        "{:.0} acq/s, safety {}",
                        r.throughput_per_s, r.safety.verdict
                    ));
                    r
                }
                Err(e) => {
                    any_error = true;
                    let msg = format!("{e:#}");
                    progress.finish(format!("error: {msg}"));
                    build::failed_result(kind.name(), &scenario.workload, msg)
                }
            };
        let mut result = result;
        if args.repeat > 1 && result.status == "ok" {
            let rerun = |s: Scenario, dir: RunDir, control| async move {
                dispatch::run_backend(kind, &s, endpoints, &dir, control, env).await
            };
            let (n, quiet) = (args.repeat, args.quiet);
            super::repeat::more(
                &mut result,
                n,
                scenario,
                &run_dir,
                quiet,
                &interrupted,
                &current,
                rerun,
            )
            .await;
        }
        for stall in &result.stalls {
            eprintln!(
                "ALARM: {}: no client acquired the lock for {:.1} s ({:.1} s to {:.1} s on the run clock; stall_alarm {})",
                result.backend,
                stall.ms / 1e3,
                stall.from_s,
                stall.to_s,
                humantime::format_duration(scenario.stall_alarm)
            );
        }
        results.results.push(result);
        results.scorecard = build::scorecard(&results.results);
        run_dir.write_results(&results)?;
    }
    watcher.abort();
    let was_interrupted = interrupted.load(Ordering::SeqCst);
    results.complete = !was_interrupted;
    run_dir.write_results(&results)?;

    println!("{}", table::render(&results));
    for r in &results.results {
        if r.safety.verdict == "invalid" {
            println!(
                "FINDING: {} broke mutual exclusion: {} overlap episodes ({:.1} ms with two holders), {} stale writes accepted, {} rejected, {} writes after the lock was lost ({} accepted)",
                r.backend,
                r.safety.mutex_violations,
                r.safety.overlap_ms,
                r.safety.stale_writes_accepted,
                r.safety.stale_writes_rejected,
                r.safety.writes_after_lock_lost,
                r.safety.writes_after_lock_lost_accepted
            );
        }
    }
    for r in &results.results {
        if let Some(s) = r.shared_lock.as_ref().filter(|s| s.conflicts > 0) {
            println!(
                "FINDING: {} broke its shared lock: {} grants next to an incompatible holder ({} reader/writer)",
                r.backend, s.conflicts, s.reader_writer_conflicts
            );
        }
    }
    if let Some(card) = &results.scorecard {
        println!("{}", table::render_scorecard(card));
    }
    println!("results: {}", run_dir.path().join("results.json").display());
    super::report::render(run_dir.path());
    Ok(if was_interrupted {
        ExitCode::from(130)
    } else if any_error {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn load_scenario(args: &RunArgs) -> anyhow::Result<Scenario> {
    let path = Path::new(&args.scenario);
    let (source, text) = if path.exists() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario file {}", path.display()))?;
        (path.display().to_string(), text)
    } else if let Some(text) = builtin::find(&args.scenario) {
        (
            format!("built-in scenario {}", args.scenario),
            text.to_string(),
        )
    } else {
        anyhow::bail!(
            "`{}` is neither a scenario file nor a built-in scenario; built-ins: {}",
            args.scenario,
            builtin::names().join(", ")
        );
    };
    let mut sets = args.sets.clone();
    if let Some(seed) = args.seed {
        sets.push(format!("seed={seed}"));
    }
    Scenario::load(&source, &text, &sets).map_err(anyhow::Error::msg)
}

/// Resolves `--cluster`: the endpoints, a label for the results, and the managed cluster if
/// this run started it (so it is stopped afterwards).
pub(crate) async fn prepare_cluster(
    spec: &str,
    state_dir: PathBuf,
) -> anyhow::Result<(Endpoints, String, Option<Cluster>)> {
    if spec == "managed" {
        let cluster = Cluster::new(state_dir);
        eprintln!("lockbench: checking the managed cluster (starting it if needed)");
        let report = cluster
            .up()
            .await
            .context("the managed cluster did not come up (see `lockbench status`)")?;
        let endpoints = report.status.endpoints.clone();
        Ok((
            endpoints,
            "managed".into(),
            report.started.then_some(cluster),
        ))
    } else if spec == "compose" {
        // docker-compose.yml's servers, through Toxiproxy (compose/endpoints.toml).
        Ok((lockbench_compose::endpoints(), "compose".into(), None))
    } else if let Some(file) = spec.strip_prefix("external:") {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read cluster file {file}"))?;
        let endpoints =
            Endpoints::from_toml(&text).map_err(|e| anyhow::anyhow!("cluster file {file}: {e}"))?;
        Ok((endpoints, spec.to_string(), None))
    } else {
        anyhow::bail!("--cluster {spec}: expected `managed`, `compose` or `external:FILE`")
    }
}
