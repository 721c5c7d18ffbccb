//! `lockbench compare BASE NEW`: verdicts per (backend, workload, metric); exit code 1 on any
//! regression, 2 when the inputs cannot be read (so CI can tell "worse" from "broken"); and
//! `lockbench scaling RUN...`, the runs as a scaling curve per backend.

use crate::cli::{CompareArgs, GateArgs};
use lockbench_compare::{Config, render};
use std::process::ExitCode;

/// Runs the comparison and prints it.
pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    match compare(&args) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(2))
        }
    }
}

/// The gate's configuration: the file, then the flags over it.
fn config(args: &GateArgs) -> anyhow::Result<Config> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
            Config::from_toml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => Config::default(),
    };
    for flag in &args.thresholds {
        config.set_from_flag(flag).map_err(anyhow::Error::msg)?;
    }
    if let Some(s) = args.significance {
        anyhow::ensure!(s > 0.0 && s < 1.0, "--significance must be in (0, 1)");
        config.significance = s;
    }
    Ok(config)
}

fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let config = config(&args.gate)?;
    let base = lockbench_compare::load(&args.base)?;
    let new = lockbench_compare::load(&args.new)?;
    let comparison = lockbench_compare::compare(&base, &new, &config);
    let text = match args.format.as_str() {
        "markdown" => render::markdown(&comparison),
        "json" => render::json(&comparison),
        _ => render::table_in_color(&comparison, crate::color::stdout()),
    };
    print!("{text}");
    if let Some(path) = &args.html {
        std::fs::write(path, render::html(&comparison))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        eprintln!("comparison: {}", path.display());
    }
    Ok(if comparison.regressions() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `lockbench merge RUN... --out DIR`: writes the merged run; exit code 2 when a run cannot be
/// read or the runs do not merge.
pub fn merge(runs: &[std::path::PathBuf], out: &std::path::Path) -> ExitCode {
    let merged = load_all(runs).and_then(|loaded| lockbench_compare::merge(&loaded));
    let written = merged.and_then(|m| {
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let file = out.join("results.json");
        let text = serde_json::to_string_pretty(&m).expect("results serialise");
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(file)
    });
    match written {
        Ok(file) => {
            eprintln!("merged {} runs: {}", runs.len(), file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `lockbench scaling RUN... [--what-if N] [--plot FILE]`: prints the curves and their models
/// as Markdown, and draws them when asked; exit code 2 when a run cannot be read or the plot
/// cannot be written.
pub fn scaling(
    runs: &[std::path::PathBuf],
    what_if: &[lockbench_compare::scaling::WhatIf],
    plot: Option<&std::path::Path>,
) -> ExitCode {
    use lockbench_compare::scaling;
    let loaded = match load_all(runs) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let curves = scaling::curves(&loaded);
    print!("{}", scaling::markdown(&curves, what_if));
    let Some(file) = plot else {
        return ExitCode::SUCCESS;
    };
    let axis = curves
        .iter()
        .find_map(scaling::Curve::axis)
        .unwrap_or(scaling::Axis::Workers);
    let series: Vec<lockbench_report::scaling_plot::Series> = curves
        .iter()
        .map(|c| lockbench_report::scaling_plot::Series {
            backend: c.backend.clone(),
            measured: c.along(c.axis().unwrap_or(axis)),
            model: c
                .model()
                .ok()
                .map(|(_, fit)| Box::new(move |n: f64| fit.predict(n)) as Box<dyn Fn(f64) -> f64>),
        })
        .collect();
    let up_to = what_if.iter().map(|q| q.n).fold(1.0, f64::max);
    let drawn = lockbench_report::scaling_plot::svg(axis.name(), &series, up_to).and_then(|svg| {
        std::fs::write(file, svg)
            .map_err(|e| format!("cannot write the plot to {}: {e}", file.display()))
    });
    match drawn {
        Ok(()) => {
            eprintln!("plot: {}", file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `lockbench noise RUN...`: the A/A chain as Markdown; exit code 2 when a run cannot be read,
/// the runs are of different scenarios or fewer than two.
pub fn noise(
    runs: &[std::path::PathBuf],
    rounds: u64,
    calibrate: Option<&std::path::Path>,
    (slowed, trials): (&[std::path::PathBuf], u64),
    gate: &GateArgs,
) -> ExitCode {
    use lockbench_compare::{noise, power};
    let rounds = usize::try_from(rounds).unwrap_or(usize::MAX);
    let trials = usize::try_from(trials).unwrap_or(usize::MAX);
    let outcome = config(gate)
        .map_err(|e| format!("{e:#}"))
        .and_then(|config| {
            let loaded = load_all(runs)?;
            let chain = noise::chain(&loaded, &config)?;
            let detectable = noise::detectable(&loaded, &config, rounds);
            let mut text = format!("One run a side, each run against the one before:\n\n{}", noise::markdown(&chain));
            if rounds >= 2 && loaded.len() >= 2 * rounds {
                let turns = noise::in_turns(&loaded, rounds, &config)?;
                text.push_str(&format!(
                    "\n{rounds} runs a side in turns, as scripts/gate runs them (every {} consecutive runs; \
                     neighbouring windows share runs):\n\n{}",
                    2 * rounds,
                    noise::markdown(&turns)
                ));
            }
            text.push_str(&noise::detectable_markdown(&detectable, rounds));
            if !slowed.is_empty() {
                let slowed = load_all(slowed)?;
                let caught = power::power(&loaded, &slowed, rounds, trials, &config)?;
                text.push_str(&power::markdown(&caught, rounds));
            }
            if let Some(path) = calibrate {
                let calibrated = noise::calibrate(&loaded, &config, rounds);
                std::fs::write(path, noise::calibration_toml(&calibrated, &loaded, rounds))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                text.push_str(&format!(
                    "\nThresholds fitted to each backend's spread ({} run(s) a side): {} (compare --config).\n",
                    rounds,
                    path.display()
                ));
            }
            Ok(text)
        });
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Every run of `runs` (directories or results.json files), labelled by its path; the first
/// that cannot be read is the error.
fn load_all(
    runs: &[std::path::PathBuf],
) -> Result<Vec<(String, lockbench_compare::RunResults)>, String> {
    runs.iter()
        .map(|path| {
            lockbench_compare::load(path)
                .map(|r| (path.display().to_string(), r))
                .map_err(|e| format!("{e:#}"))
        })
        .collect()
}
