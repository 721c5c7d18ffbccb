//! `lockbench run`: load the scenario, make sure servers are there, run each backend, write
//! and print the results. Ctrl-C stops the current backend, keeps everything recorded so far
//! (history, partial `results.json`) and stops a cluster this run started.

use super::session::{CtrlC, Servers};
use crate::cli::RunArgs;
use crate::{builtin, dispatch, progress::Progress};
use anyhow::Context;
use lockbench_cluster::Cluster;
use lockbench_core::{Endpoints, Scenario};
use lockbench_report::{RunDir, build, table};
use lockbench_workloads::RunControl;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Runs a scenario.
pub async fn run(args: RunArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let scenario = load_scenario(&args)?;
    let servers = Servers::prepare(&args.cluster, state_dir, &scenario).await?;
    let outcome = run_scenario(&args, &scenario, &servers).await;
    servers.finish("run").await;
    outcome
}

async fn run_scenario(
    args: &RunArgs,
    scenario: &Scenario,
    servers: &Servers,
) -> anyhow::Result<ExitCode> {
    let (endpoints, env) = (&servers.endpoints, &servers.env);
    let run_dir = RunDir::create(Path::new("results"), &scenario.name, args.out.as_deref())?;
    run_dir.write_scenario(&scenario.to_toml())?;
    if scenario.workload.kind == lockbench_core::scenario::WorkloadKind::Failover {
        eprintln!(
            "lockbench: scenario `{}` (seed {}), {} candidates per election recipe",
            scenario.name, scenario.seed, scenario.workload.clients,
        );
    } else {
        eprintln!(
            "lockbench: scenario `{}` (seed {}), {} clients on {} key(s), {} per backend after {} warm-up",
            scenario.name,
            scenario.seed,
            scenario.workload.clients,
            scenario.workload.keys,
            humantime::format_duration(scenario.duration),
            humantime::format_duration(scenario.warmup),
        );
    }
    eprintln!("lockbench: results go to {}", run_dir.path().display());
    if crate::placement::uses_workers(scenario) {
        eprintln!("lockbench: worker processes run in {}", env.describe());
    }

    let mut results = servers.results_header(&scenario.name, scenario.seed).await;
    run_dir.write_results(&results)?;

    let ctrl_c = CtrlC::watch("backend");
    let (interrupted, current) = (&ctrl_c.interrupted, &ctrl_c.current);
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
                interrupted,
                current,
                rerun,
            )
            .await;
        }
        if let Some(u) = result.resources.as_ref().filter(|u| u.generator_bound) {
            eprintln!(
                "NOTE: {}: lockbench itself was the limit in this run, so its throughput is a lower bound: {}",
                result.backend,
                u.generator_notes.join("; ")
            );
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
    if args.repeat > 1 && !scenario.elections.is_empty() {
        eprintln!(
            "lockbench: --repeat applies to lock backends; each election recipe runs once (raise failover.rounds for more samples)"
        );
    }
    for &election in &scenario.elections {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        let result =
            crate::failover::run_one(election, scenario, endpoints, &run_dir, env, current).await;
        any_error |= result.status == "error";
        results.results.push(result);
        run_dir.write_results(&results)?;
    }
    let was_interrupted = ctrl_c.pressed();
    results.complete = !was_interrupted;
    run_dir.write_results(&results)?;

    if results.results.iter().any(|r| r.failover.is_none()) {
        println!("{}", table::render(&results));
    }
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
    if let Some(failover) = lockbench_report::failover_table::render(&results) {
        println!("{failover}");
    }
    println!("results: {}", run_dir.path().join("results.json").display());
    super::report::render(run_dir.path());
    Ok(super::session::exit_code(was_interrupted, any_error))
}

fn load_scenario(args: &RunArgs) -> anyhow::Result<Scenario> {
    load_named_scenario(&args.scenario, &args.sets, args.seed)
}

/// Loads a scenario file or built-in by name, with `--set` overrides and `--seed`.
pub(crate) fn load_named_scenario(
    name: &str,
    sets: &[String],
    seed: Option<u64>,
) -> anyhow::Result<Scenario> {
    let path = Path::new(name);
    let (source, text) = if path.exists() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario file {}", path.display()))?;
        (path.display().to_string(), text)
    } else if let Some(text) = builtin::find(name) {
        (format!("built-in scenario {name}"), text.to_string())
    } else {
        anyhow::bail!(
            "`{name}` is neither a scenario file nor a built-in scenario; built-ins: {}",
            builtin::names().join(", ")
        );
    };
    let mut sets = sets.to_vec();
    if let Some(seed) = seed {
        sets.push(format!("seed={seed}"));
    }
    Scenario::load(&source, &text, &sets).map_err(anyhow::Error::msg)
}

/// How long `--cluster compose` waits for the compose cluster to be healthy (a cold
/// ZooKeeper ensemble takes ~10 s; a loaded 2-core machine several times that).
const COMPOSE_HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

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
        // docker-compose.yml's servers at their container addresses (compose/endpoints.toml),
        // once every one is healthy.
        lockbench_compose::wait_healthy(COMPOSE_HEALTH_TIMEOUT).await?;
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
