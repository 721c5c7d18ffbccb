//! `lockbench run verdict`: every backend through what decides the choice, one page.
//!
//! The suite's parts ([`plan`]) run one after another on one set of servers, each into a run
//! directory of its own under the suite's (`shape-8x1/`, `holder-pause/`, ...), with its own
//! report and expectations. Then [`decide`](lockbench_results::decision::decide) reads their
//! results into `verdict.json`, and the page (`report.html`), the Markdown summary
//! (`summary.md`) and the terminal's table are drawn from that. Ctrl-C stops the running part;
//! the parts done so far still make a page, marked incomplete.

mod plan;

use crate::cli::RunArgs;
use crate::console::Console;
use anyhow::Context;
use lockbench_report::RunDir;
use lockbench_results::decision::{self, Decision, Part, PartRun};
use lockbench_results::expect::Outcome;
use lockbench_results::{RunResults, headline};
use lockbench_runner::{ClusterChoice, Runner, Servers};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub use plan::DEFAULT_BUDGET;

/// The suite's name, as `lockbench run` takes it.
pub const NAME: &str = "verdict";

/// Runs the suite. Exits 0 when every part met its expectations, 1 when one failed, 2 when
/// one could not say or the suite was interrupted.
pub async fn run(args: &RunArgs, budget: Duration, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let began = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let plan = plan::plan(&args.sets, args.seed, budget)?;
    let dir = suite_dir(args.out.as_deref(), &started_at)?;
    crate::say!(
        "the verdict suite: {} backend(s) through {} parts, about {} (budget {}{})",
        plan.subjects.len(),
        plan.parts.len(),
        plan::seconds(plan.estimate),
        humantime::format_duration(budget),
        if plan.scale < 1.0 {
            format!(
                "; measured windows and the knee search at {:.0}%",
                plan.scale * 100.0
            )
        } else {
            String::new()
        }
    );
    crate::say!("results go to {}", dir.display());
    crate::logging::announce(&dir);
    // One set of servers for every part, prepared for the part that needs most: the fault
    // run's client hosts and faults, on every backend of the suite (the other parts run these
    // backends or fewer).
    let prepare = &plan
        .parts
        .iter()
        .find(|p| p.part == Part::Faults)
        .expect("the plan has a fault part")
        .scenario;
    let cluster = ClusterChoice::parse(&args.cluster, state_dir)?;
    let servers = Servers::prepare(cluster, prepare).await?;
    let runner = Runner::new(
        servers,
        Arc::new(Console::new(crate::verbosity::quiet())),
        "backend",
    );
    let outcome = run_parts(&plan, &runner, &dir, budget, (began, started_at)).await;
    runner.finish("suite").await;
    outcome
}

/// The suite's directory: `--out`, or `results/TIME-verdict`.
fn suite_dir(out: Option<&Path>, started_at: &str) -> anyhow::Result<PathBuf> {
    let dir = match out {
        Some(p) => p.to_path_buf(),
        None => Path::new("results").join(format!(
            "{}-{NAME}",
            started_at.replace(':', "").trim_end_matches('Z')
        )),
    };
    if dir.join(lockbench_report::decision::FILE).exists() {
        anyhow::bail!(
            "{} already holds a suite's results; choose another --out directory",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create results directory {}", dir.display()))?;
    Ok(dir)
}

async fn run_parts(
    plan: &plan::Plan,
    runner: &Runner,
    dir: &Path,
    budget: Duration,
    (began, started_at): (Instant, String),
) -> anyhow::Result<ExitCode> {
    let mut done: Vec<(usize, RunResults, f64)> = Vec::new();
    let count = plan.parts.len();
    for (i, p) in plan.parts.iter().enumerate() {
        if runner.interrupted() {
            break;
        }
        if p.scenario.backends.is_empty() {
            crate::say!(
                "part {} of {count}: {}: no backend here has it",
                i + 1,
                p.part.title()
            );
            // Recorded all the same, so each backend's cell says why it has none.
            let mut none = runner.header(&p.scenario.name, p.scenario.seed).await;
            none.complete = true;
            done.push((i, none, 0.0));
            continue;
        }
        crate::say!(
            "part {} of {count}: {}: {} backend(s), about {} s ({:.0} s into the suite)",
            i + 1,
            p.part.title(),
            p.scenario.backends.len(),
            p.estimate.as_secs(),
            began.elapsed().as_secs_f64()
        );
        let part_began = Instant::now();
        let path = dir.join(p.part.dir_name());
        let run_dir = RunDir::create(dir, &p.part.dir_name(), Some(&path))?;
        run_dir.write_scenario(&p.scenario.to_toml())?;
        let results = match &p.sweep {
            Some(spec) => {
                let points = lockbench_capacity::grid::points(&[]);
                super::sweep::knees(
                    &run_dir,
                    &p.scenario,
                    spec,
                    &points,
                    std::slice::from_ref(&p.scenario),
                    runner,
                )
                .await?
            }
            None => runner.run(&p.scenario, &run_dir).await?,
        };
        // A knee search judges no expectation: its line would only say so.
        if let Some(line) = headline::of(&results)
            .lines()
            .first()
            .filter(|_| !results.expectations.is_empty())
        {
            crate::say!("{}: {line}", p.part.dir_name());
        }
        if let Err(e) = lockbench_report::html::write_report(&path) {
            eprintln!("warning: no HTML report for {}: {e:#}", path.display());
        }
        done.push((i, results, part_began.elapsed().as_secs_f64()));
    }
    let complete = !runner.interrupted();
    let runs: Vec<PartRun<'_>> = done
        .iter()
        .map(|(i, results, wall_s)| {
            let p = &plan.parts[*i];
            PartRun {
                part: p.part,
                dir: p.part.dir_name(),
                results,
                wall_s: *wall_s,
                skipped: p.skipped.clone(),
            }
        })
        .collect();
    let mut environment = done
        .first()
        .map(|(_, r, _)| r.environment.clone())
        .unwrap_or_else(|| lockbench_results::environment::detect(Default::default()));
    environment.load_average_end = lockbench_results::environment::load_average_now();
    let slo_p99_ms = plan
        .parts
        .iter()
        .find_map(|p| p.sweep.as_ref())
        .map_or(0.0, |s| s.slo_p99.as_secs_f64() * 1e3);
    let header = Decision {
        schema_version: decision::DECISION_SCHEMA_VERSION,
        started_at,
        seed: plan.parts[0].scenario.seed,
        budget_s: budget.as_secs_f64(),
        wall_s: began.elapsed().as_secs_f64(),
        complete,
        cluster: runner.servers().label.clone(),
        connections: done
            .first()
            .map(|(_, r, _)| r.connections.clone())
            .unwrap_or_default(),
        environment,
        slo_p99_ms,
        parts: Vec::new(),
        rows: Vec::new(),
        picks: Vec::new(),
    };
    let decision = decision::decide(header, &plan.subjects, &runs);
    let page = lockbench_report::decision::write(dir, &decision)?;
    println!("{}", lockbench_report::decision::terminal(&decision));
    println!(
        "verdict: {}",
        dir.join(lockbench_report::decision::FILE).display()
    );
    println!(
        "summary: {}",
        dir.join(lockbench_report::decision::SUMMARY).display()
    );
    println!("report: {}", page.display());
    println!(
        "the suite took {:.1} min (estimated {})",
        decision.wall_s / 60.0,
        plan::seconds(plan.estimate)
    );
    use super::run::{EXIT_FAILED, EXIT_UNKNOWN};
    Ok(if !decision.complete {
        ExitCode::from(EXIT_UNKNOWN)
    } else {
        match decision.worst() {
            Some(Outcome::Failed) => ExitCode::from(EXIT_FAILED),
            Some(Outcome::Unknown) => ExitCode::from(EXIT_UNKNOWN),
            _ => ExitCode::SUCCESS,
        }
    })
}
