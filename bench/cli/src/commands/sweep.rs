//! `lockbench sweep`: the grid x backends x offered-rate search, the sizing table, and the
//! sweep directory (`steps/<backend>-p<point>-<n>-<phase>-<rate>/` per step, `results.json`
//! with the knee steps and `capacity`, `report.html`). Ctrl-C stops the running step and keeps
//! everything recorded so far.

use super::run::load_named_scenario;
use crate::cli::SweepArgs;
use crate::console::Console;
use lockbench_capacity::{Objective, Search, grid};
use lockbench_core::Scenario;
use lockbench_core::sweep::{Rates, SweepSpec, parse_vary};
use lockbench_report::{RunDir, sizing};
use lockbench_results::capacity::{Capacity, SizingRow, SizingVerdict, SweepPoint, SweepStep};
use lockbench_results::{BackendResult, Status};
use lockbench_runner::sweep_step::{self, StepContext};
use lockbench_runner::{ClusterChoice, Runner, Servers};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// How many generator-bound failed steps a grid point may run again.
const RETRIES_PER_POINT: u32 = 2;

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
        let mut s = Scenario::load(
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
    let objective = Objective {
        p99: spec.slo_p99,
        tolerance: spec.tolerance,
        max_error_rate: spec.max_error_rate,
    };
    eprintln!(
        "lockbench: sweep of `{}`: {} backend(s) x {} grid point(s), objective p99 <= {} with achieved >= {:.0}% of offered; steps of {} after {} warm-up",
        full.name,
        full.backends.len(),
        points.len(),
        humantime::format_duration(spec.slo_p99),
        (1.0 - spec.tolerance) * 100.0,
        humantime::format_duration(spec.step),
        humantime::format_duration(spec.step_warmup),
    );
    eprintln!("lockbench: sweep directory {}", dir.path().display());
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
            let found = search_point(&ctx, spec, kind, pi, &label).await?;
            let values: BTreeMap<String, String> = point.iter().cloned().collect();
            let row = sizing_row(&found, kind, values.clone(), scenario);
            eprintln!(
                "lockbench: {} {label}: {} acq/s ({})",
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
    let was_interrupted = runner.interrupted();
    results.complete = !was_interrupted;
    dir.write_results(&results)?;
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

/// One grid point's search: every step run, the results at each sustained rate, and why it
/// stopped early (an error, Ctrl-C).
struct PointSearch {
    search: Search,
    steps: Vec<SweepStep>,
    knee_results: Vec<(Option<f64>, BackendResult)>,
    stopped: Option<Stopped>,
}

/// Why a grid point's search stopped before its end.
enum Stopped {
    /// Ctrl-C.
    Interrupted,
    /// A step could not run: the step's reasons.
    Error(String),
}

/// Runs the offered-rate search of one grid point, step by step.
async fn search_point(
    ctx: &StepContext<'_>,
    spec: &SweepSpec,
    kind: lockbench_core::BackendKind,
    pi: usize,
    label: &str,
) -> anyhow::Result<PointSearch> {
    let interrupted = || ctx.runner.interrupted();
    let mut search = match &spec.rates {
        Rates::List(l) => Search::listed(l.clone(), spec.max_steps),
        Rates::Auto(_) => Search::auto(spec.resolution, spec.max_steps),
    };
    let mut steps: Vec<SweepStep> = Vec::new();
    let mut knee_results: Vec<(Option<f64>, BackendResult)> = Vec::new();
    let mut stopped = None;
    let mut retries = RETRIES_PER_POINT;
    while let Some((phase, rate)) = search.next() {
        if interrupted() {
            break;
        }
        let (step, result) = loop {
            let id = format!("{}-p{pi}-{:02}", kind.name(), steps.len());
            let (step, result) = sweep_step::run(ctx, kind, &id, phase, rate).await?;
            eprintln!("{}", line(kind.name(), label, &step));
            // A failure while lockbench was the limit says little about the backend:
            // run that rate once more (the machine may be busy with something else).
            let again = rate.is_some()
                && !step.sustained
                && step.generator_bound
                && retries > 0
                && result.status != Status::Error
                && !interrupted();
            if !again {
                break (step, result);
            }
            retries -= 1;
            eprintln!("  (lockbench was the limit in that step: running it once more)");
            steps.push(step);
        };
        if interrupted() {
            // Cut short by Ctrl-C: kept, but it says nothing about the backend.
            stopped = Some(Stopped::Interrupted);
            steps.push(step);
            break;
        }
        if result.status == Status::Error {
            stopped = Some(Stopped::Error(step.reasons.join("; ")));
            steps.push(step);
            break;
        }
        match rate {
            None => search.record_probe(step.achieved_per_s),
            Some(r) => search.record(r, step.sustained, step.generator_bound),
        }
        knee_results.push((rate, result));
        steps.push(step);
    }
    Ok(PointSearch {
        search,
        steps,
        knee_results,
        stopped,
    })
}

/// The sizing table's row for one grid point: the knee, its verdict and why.
fn sizing_row(
    found: &PointSearch,
    kind: lockbench_core::BackendKind,
    point: BTreeMap<String, String>,
    scenario: &Scenario,
) -> SizingRow {
    let steps = &found.steps;
    let knee = found.search.knee();
    let at = |rate: Option<f64>| {
        // The last step at that rate (an earlier one may have been run again).
        rate.and_then(|r| steps.iter().rev().find(|s| s.offered_per_s == Some(r)))
    };
    let knee_step = at(knee.rate);
    let verdict = match &found.stopped {
        Some(Stopped::Interrupted) => SizingVerdict::Interrupted,
        Some(Stopped::Error(_)) => SizingVerdict::Error,
        None => knee.verdict,
    };
    let note = match (&found.stopped, verdict) {
        (Some(Stopped::Interrupted), _) => "interrupted".into(),
        (Some(Stopped::Error(e)), _) => e.clone(),
        (None, SizingVerdict::GeneratorBound) => {
            // The step that bounds the knee: the failure above it, else the top one.
            let bound = at(knee.failed).or_else(|| {
                steps
                    .iter()
                    .filter(|s| s.offered_per_s.is_some())
                    .max_by(|a, b| {
                        a.offered_per_s
                            .partial_cmp(&b.offered_per_s)
                            .expect("rates are finite")
                    })
            });
            format!(
                "lockbench was the limit, so the rate is a lower bound: at {:.0}/s {}",
                bound.and_then(|s| s.offered_per_s).unwrap_or(0.0),
                bound
                    .map(|s| s.generator_notes.join("; "))
                    .unwrap_or_default()
            )
        }
        (None, SizingVerdict::NotReached) => {
            "every rate tried was sustained: a lower bound (raise --max-steps or the clients)"
                .into()
        }
        (None, SizingVerdict::None) => "not even the lowest rate tried was sustained".into(),
        _ => at(knee.failed)
            .map(|s| format!("above it: {}", s.reasons.join("; ")))
            .unwrap_or_default(),
    };
    SizingRow {
        backend: kind.name().into(),
        point,
        clients: scenario.workload.clients,
        keys: scenario.workload.keys,
        verdict,
        max_rate_per_s: knee.rate,
        first_failed_rate_per_s: knee.failed,
        knee: knee_step.cloned(),
        note,
    }
}

/// One progress line for the terminal.
fn line(backend: &str, point: &str, s: &SweepStep) -> String {
    let offered = s
        .offered_per_s
        .map(|r| format!("offered {r:>8.0}/s"))
        .unwrap_or_else(|| "closed loop     ".into());
    let verdict = match (s.offered_per_s, s.sustained) {
        (None, _) => "probe".to_string(),
        (_, true) => "sustained".into(),
        (_, false) => format!("NOT sustained: {}", s.reasons.join("; ")),
    };
    format!(
        "  {backend} {point} {:<6} {offered} -> {:>8.0}/s  p99 {:>8} ms (uncorrected {:>7} ms)  lockbench CPU {:>3.0}%{}  {verdict}",
        s.phase,
        s.achieved_per_s,
        s.p99_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".into()),
        s.p99_service_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "-".into()),
        s.generator_cpu_percent.unwrap_or(0.0),
        if s.generator_bound {
            " GENERATOR-BOUND"
        } else {
            ""
        },
    )
}
