//! `lockbench run`: load the scenario, make sure servers are there, run each backend, write
//! and print the results. Ctrl-C stops the current backend, keeps everything recorded so far
//! (history, partial `results.json`) and stops a cluster this run started.

use crate::builtin;
use crate::cli::RunArgs;
use crate::color::{Ink, paint};
use crate::console::Console;
use anyhow::Context;
use lockbench_core::Scenario;
use lockbench_report::{RunDir, table};
use lockbench_results::{RunResults, Status, Validity, expect, headline};
use lockbench_runner::{ClusterChoice, Runner, Servers};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Runs a scenario. An error (a bad scenario, servers that cannot be prepared) exits 2, as an
/// `unknown` result does: nothing could be judged.
pub async fn run(args: RunArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    match run_or_fail(args, state_dir).await {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(EXIT_UNKNOWN))
        }
    }
}

/// Exit code: an expectation failed (an invalid verdict nobody expected is one).
pub(super) const EXIT_FAILED: u8 = 1;
/// Exit code: something could not be judged, or an error.
pub(super) const EXIT_UNKNOWN: u8 = 2;

async fn run_or_fail(args: RunArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    if args.scenario == super::verdict::NAME && !Path::new(&args.scenario).exists() {
        if args.repeat > 1 {
            anyhow::bail!(
                "--repeat applies to a scenario; the {} suite runs each part once",
                super::verdict::NAME
            );
        }
        let budget = args.budget.unwrap_or(super::verdict::DEFAULT_BUDGET);
        return super::verdict::run(&args, budget, state_dir).await;
    }
    if let Some(budget) = args.budget {
        anyhow::bail!(
            "--budget {} applies to the {} suite; `{}` is a scenario: set its length with \
             --set duration=...",
            humantime::format_duration(budget),
            super::verdict::NAME,
            args.scenario
        );
    }
    let scenario = load_scenario(&args)?;
    let cluster = ClusterChoice::parse(&args.cluster, state_dir)?;
    let servers = Servers::prepare(cluster, &scenario).await?;
    let runner = Runner::new(
        servers,
        Arc::new(Console::new(crate::verbosity::quiet())),
        "backend",
    )
    .with_repeat(args.repeat);
    let outcome = run_scenario(&args, &scenario, &runner).await;
    runner.finish("run").await;
    outcome
}

async fn run_scenario(
    args: &RunArgs,
    scenario: &Scenario,
    runner: &Runner,
) -> anyhow::Result<ExitCode> {
    let run_dir = RunDir::create(Path::new("results"), &scenario.name, args.out.as_deref())?;
    run_dir.write_scenario(&scenario.to_toml())?;
    if scenario.workload.kind == lockbench_core::scenario::WorkloadKind::Failover {
        crate::say!(
            "scenario `{}` (seed {}), {} candidates per election recipe",
            scenario.name,
            scenario.seed,
            scenario.workload.clients,
        );
    } else {
        crate::say!(
            "scenario `{}` (seed {}), {} clients on {} key(s) on {}, {} per backend after {} \
             warm-up",
            scenario.name,
            scenario.seed,
            scenario.workload.clients,
            scenario.workload.keys,
            match runner.servers().client_threads {
                1 => "1 client thread".to_string(),
                n => format!("{n} client threads"),
            },
            humantime::format_duration(scenario.duration),
            humantime::format_duration(scenario.warmup),
        );
    }
    crate::say!("results go to {}", run_dir.path().display());
    crate::logging::announce(run_dir.path());
    if let Some(w) = scenario
        .workers
        .filter(|w| w.dials_in() && w.launcher != lockbench_core::workers::Launcher::External)
    {
        crate::say!(
            "{} worker(s) started by the `{}` launcher dial in with the run's secret \
             (their ops on their own clocks); resource service on {}",
            w.count,
            w.launcher.name(),
            runner.servers().env.bind
        );
    } else if lockbench_runner::placement::uses_workers(scenario) {
        crate::say!(
            "worker processes run in {}",
            runner.servers().env.describe()
        );
    }
    let results = runner.run(scenario, &run_dir).await?;
    for r in results.results.iter().filter(|r| r.status == Status::Ok) {
        if r.safety.verdict == Validity::Unknown {
            // No verdict is never a pass (e.g. nothing was granted): the run fails (exit 2).
            eprintln!(
                "UNKNOWN: {}: no safety verdict: {}",
                r.backend,
                r.safety.failed_checkers.join("; ")
            );
        }
    }
    print_results(&results);
    print_expectations(scenario, &results);
    println!("results: {}", run_dir.path().join("results.json").display());
    super::report::render(run_dir.path());
    // The last lines: the run against its expectations, its violations expected or not, and
    // every expectation not met (the report opens with the same).
    print_headline(&results);
    if !results.complete {
        return Ok(super::exit_code(true, false));
    }
    Ok(match expect::worst(&results.expectations) {
        Some(expect::Outcome::Failed) => ExitCode::from(EXIT_FAILED),
        Some(expect::Outcome::Unknown) => ExitCode::from(EXIT_UNKNOWN),
        _ => ExitCode::SUCCESS,
    })
}

/// The headline's lines, the title in its verdict's colour and every line about something not
/// met in red (failed) or yellow (unknown).
fn print_headline(results: &RunResults) {
    let h = headline::of(results);
    let title = match h.verdict {
        headline::Verdict::Met => Ink::Green,
        headline::Verdict::Failed => Ink::Red,
        headline::Verdict::Unknown | headline::Verdict::Incomplete => Ink::Yellow,
    };
    for (i, line) in h.lines().iter().enumerate() {
        let ink = if i == 0 {
            Some(title)
        } else if line.starts_with("UNEXPECTED") || line.starts_with("EXPECTATION FAILED") {
            Some(Ink::Red)
        } else if line.starts_with("EXPECTATION UNKNOWN") {
            Some(Ink::Yellow)
        } else {
            None
        };
        match ink {
            Some(ink) => println!("{}", paint(line, ink)),
            None => println!("{line}"),
        }
    }
}

/// One `EXPECTATION MET` line per expectation met (not the implicit `safe` of a backend the
/// scenario did not name), and the entries naming a backend this run did not have. The ones
/// not met close the output, under the headline.
fn print_expectations(scenario: &Scenario, results: &RunResults) {
    let skipped = scenario.expect.resolve(&scenario.unit_names()).not_in_run;
    if !skipped.is_empty() {
        let list: Vec<String> = skipped.iter().map(|(f, b)| format!("{f} {b}")).collect();
        println!(
            "expectations not checked (backend not in this run): {}",
            list.join(", ")
        );
    }
    for e in &results.expectations {
        if !e.implicit && e.outcome == expect::Outcome::Met {
            println!("{}", paint(&expect::line(e), Ink::Green));
        }
    }
}

/// The table, every finding, the scorecard and the failover table.
fn print_results(results: &RunResults) {
    if results.results.iter().any(|r| r.failover.is_none()) {
        println!(
            "{}",
            table::render_in_color(results, crate::color::stdout())
        );
    }
    for line in results.results.iter().filter_map(table::finding) {
        println!("{}", paint(&line, Ink::Red));
    }
    for line in results.results.iter().filter_map(table::instrument_fault) {
        println!("{}", paint(&line, Ink::Yellow));
    }
    if let Some(card) = &results.scorecard {
        println!("{}", table::render_scorecard(card));
    }
    if let Some(truth) = lockbench_report::truth_table::render(results) {
        println!("{truth}");
    }
    if let Some(failover) = lockbench_report::failover_table::render(results) {
        println!("{failover}");
    }
}

fn load_scenario(args: &RunArgs) -> anyhow::Result<Scenario> {
    // `--workers` is `--set workers...`, applied after the user's own sets.
    let mut sets = args.sets.clone();
    if let Some(w) = &args.workers {
        sets.extend(w.overrides());
    }
    if let Some(addr) = &args.listen {
        sets.push(format!("workers.listen=\"{addr}\""));
    }
    load_named_scenario(&args.scenario, &sets, args.seed)
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
    let mut scenario =
        lockbench_registry::load_scenario(&source, &text, sets).map_err(anyhow::Error::msg)?;
    if let Some(seed) = seed {
        // scenario.toml stores the seed as a TOML integer (an i64).
        if i64::try_from(seed).is_err() {
            anyhow::bail!("--seed {seed}: must be at most {}", i64::MAX);
        }
        scenario.seed = seed;
    }
    Ok(scenario)
}

#[cfg(test)]
mod tests {
    use super::load_named_scenario;

    #[test]
    fn seed_is_applied_to_the_parsed_scenario_and_a_seed_toml_cannot_store_is_refused() {
        let s = load_named_scenario("quick", &["duration=2s".into()], Some(7)).unwrap();
        assert_eq!((s.seed, s.duration.as_secs()), (7, 2));
        assert!(s.to_toml().contains("seed = 7"));
        let e = load_named_scenario("quick", &[], Some(u64::MAX)).unwrap_err();
        assert!(format!("{e}").contains("--seed"), "{e}");
    }
}
