//! `lockbench sweep`: the grid x backends x offered-rate search, the sizing table, and the
//! sweep directory (`steps/<backend>-p<point>-<n>-<phase>-<rate>/` per step, `results.json`
//! with the knee steps and `capacity`, `report.html`). Ctrl-C stops the running step and keeps
//! everything recorded so far.

use super::run::load_named_scenario;
use crate::cli::SweepArgs;
use crate::console::Console;
use lockbench_capacity::point::PointOf;
use lockbench_capacity::{Objective, grid};
use lockbench_core::Scenario;
use lockbench_core::sweep::{Rates, SweepSpec, parse_vary};
use lockbench_report::{RunDir, sizing};
use lockbench_results::RunResults;
use lockbench_results::capacity::{Capacity, SizingVerdict, SweepPoint};
use lockbench_runner::sweep_point;
use lockbench_runner::sweep_step::StepContext;
use lockbench_runner::{ClusterChoice, Runner, Servers};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Runs a sweep.
pub async fn run(args: SweepArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let base = load_named_scenario(&args.scenario, &args.sets, args.seed)?;
    let spec = spec(&base, &args)?;
    let dims = spec
        .vary
        .iter()
        .map(|v| parse_vary(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let points = grid::points(&dims);
    // Every grid point must load before anything runs: a bad path fails now, named.
    let mut scenarios = Vec::new();
    for p in &points {
        let mut s = lockbench_registry::load_scenario(
            &format!("`{}` at {}", base.name, grid::label(p)),
            &base.to_toml(),
            &grid::overrides(p),
        )
        .map_err(anyhow::Error::msg)?;
        s.duration = spec.step;
        s.warmup = spec.step_warmup;
        s.faults.clear();
        s.workload.acquisitions = None;
        scenarios.push(s);
    }

    let cluster = ClusterChoice::parse(&args.cluster, state_dir)?;
    let servers = Servers::prepare(cluster, &scenarios[0]).await?;
    let runner = Runner::new(servers, Arc::new(Console::without_bars()), "step");
    let mut full = base.clone();
    full.sweep = Some(spec.clone());
    let outcome = sweep(&args, &full, &spec, &points, &scenarios, &runner).await;
    runner.finish("sweep").await;
    outcome
}

/// The scenario's `[sweep]` with the command line's flags over it.
fn spec(base: &Scenario, args: &SweepArgs) -> anyhow::Result<SweepSpec> {
    let mut spec = base.sweep.clone().unwrap_or_default();
    if !args.vary.is_empty() {
        spec.vary = args.vary.clone();
    }
    if let Some(r) = &args.rates {
        spec.rates = if r == "auto" {
            Rates::Auto("auto".into())
        } else {
            Rates::List(
                r.split(',')
                    .map(|x| {
                        x.trim().parse::<f64>().map_err(|_| {
                            anyhow::anyhow!("--rates {r}: `{x}` is not a rate (acquisitions/s)")
                        })
                    })
                    .collect::<anyhow::Result<_>>()?,
            )
        };
    }
    if let Some(slo) = &args.slo {
        let d = slo
            .strip_prefix("p99=")
            .ok_or_else(|| anyhow::anyhow!("--slo {slo}: expected p99=DURATION, e.g. p99=50ms"))?;
        spec.slo_p99 =
            humantime::parse_duration(d).map_err(|e| anyhow::anyhow!("--slo {slo}: {e}"))?;
    }
    if let Some(t) = args.tolerance {
        spec.tolerance = t;
    }
    if let Some(r) = args.resolution {
        spec.resolution = r;
    }
    if let Some(s) = args.step {
        spec.step = s;
    }
    if let Some(s) = args.step_warmup {
        spec.step_warmup = s;
    }
    if let Some(m) = args.max_steps {
        spec.max_steps = m;
    }
    spec.validate().map_err(anyhow::Error::msg)?;
    Ok(spec)
}

async fn sweep(
    args: &SweepArgs,
    full: &Scenario,
    spec: &SweepSpec,
    points: &[grid::Point],
    scenarios: &[Scenario],
    runner: &Runner,
) -> anyhow::Result<ExitCode> {
    let began = Instant::now();
    let name = format!("sweep-{}", full.name);
    let dir = RunDir::create(Path::new("results"), &name, args.out.as_deref())?;
    dir.write_scenario(&full.to_toml())?;
    crate::say!(
        "sweep of `{}`: {} backend(s) x {} grid point(s), objective p99 <= {} with achieved >= {:.0}% of offered; steps of {} after {} warm-up",
        full.name,
        full.backends.len(),
        points.len(),
        humantime::format_duration(spec.slo_p99),
        (1.0 - spec.tolerance) * 100.0,
        humantime::format_duration(spec.step),
        humantime::format_duration(spec.step_warmup),
    );
    crate::say!("sweep directory {}", dir.path().display());
    crate::logging::announce(dir.path());
    let results = knees(&dir, full, spec, points, scenarios, runner).await?;
    let was_interrupted = runner.interrupted();
    println!(
        "{}",
        sizing::render(results.capacity.as_ref().expect("set above"))
    );
    println!(
        "sweep took {:.1} min; results: {}",
        began.elapsed().as_secs_f64() / 60.0,
        dir.path().join("results.json").display()
    );
    super::report::render(dir.path());
    let any_error = results
        .capacity
        .as_ref()
        .is_some_and(|c| c.sizing.iter().any(|r| r.verdict == SizingVerdict::Error));
    Ok(super::exit_code(was_interrupted, any_error))
}

/// Searches the knee of every backend of `full` at every grid point (`scenarios[i]` is point
/// `i`'s scenario), each step a run under `dir`, and writes and returns the sweep's results
/// (`capacity` with one sizing row per backend and point; the knee steps' results).
pub(crate) async fn knees(
    dir: &RunDir,
    full: &Scenario,
    spec: &SweepSpec,
    points: &[grid::Point],
    scenarios: &[Scenario],
    runner: &Runner,
) -> anyhow::Result<RunResults> {
    let name = format!("sweep-{}", full.name);
    let objective = Objective {
        p99: spec.slo_p99,
        tolerance: spec.tolerance,
        max_error_rate: spec.max_error_rate,
    };
    let mut results = runner.header(&name, full.seed).await;
    results.capacity = Some(Capacity {
        slo_p99_ms: spec.slo_p99.as_secs_f64() * 1e3,
        tolerance: spec.tolerance,
        max_error_rate: spec.max_error_rate,
        vary: spec.vary.clone(),
        ..Capacity::default()
    });
    dir.write_results(&results)?;

    'backends: for &kind in &full.backends {
        for (pi, (point, scenario)) in points.iter().zip(scenarios).enumerate() {
            if runner.interrupted() {
                break 'backends;
            }
            let label = grid::label(point);
            let ctx = StepContext {
                scenario,
                sweep_dir: dir.path(),
                runner,
                objective,
                header: &results,
            };
            let found = sweep_point::search(&ctx, spec, kind, pi, &label).await?;
            let values: BTreeMap<String, String> = point.iter().cloned().collect();
            let row = found.sizing_row(PointOf {
                backend: kind.name(),
                point: values.clone(),
                clients: scenario.workload.clients,
                keys: scenario.workload.keys,
            });
            crate::say!(
                "{} {label}: {} acq/s ({})",
                kind.name(),
                sizing::rate_label(&row),
                row.verdict.name()
            );
            let knee = found.search.knee();
            if let Some((_, r)) = found
                .knee_results
                .into_iter()
                .find(|(r, _)| *r == knee.rate && r.is_some())
            {
                results.results.push(r);
            }
            let cap = results.capacity.as_mut().expect("set above");
            cap.sizing.push(row);
            cap.points.push(SweepPoint {
                backend: kind.name().into(),
                point: values,
                steps: found.steps,
            });
            dir.write_results(&results)?;
        }
    }
    results.complete = !runner.interrupted();
    results.environment.load_average_end = lockbench_results::environment::load_average_now();
    dir.write_results(&results)?;
    Ok(results)
}
