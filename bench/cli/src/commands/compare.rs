//! `lockbench compare BASE NEW`: verdicts per (backend, workload, metric); exit code 1 on any
//! regression, 2 when the inputs cannot be read (so CI can tell "worse" from "broken"); and
//! `lockbench scaling RUN...`, the runs as a scaling curve per backend.

use crate::cli::CompareArgs;
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

fn compare(args: &CompareArgs) -> anyhow::Result<ExitCode> {
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
    let merged = runs
        .iter()
        .map(|path| {
            lockbench_compare::load(path)
                .map(|r| (path.display().to_string(), r))
                .map_err(|e| format!("{e:#}"))
        })
        .collect::<Result<Vec<_>, String>>()
        .and_then(|loaded| lockbench_compare::merge(&loaded));
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

/// `lockbench scaling RUN...`: prints the curves as Markdown; exit code 2 when a run cannot be
/// read.
pub fn scaling(runs: &[std::path::PathBuf]) -> ExitCode {
    let mut loaded = Vec::new();
    for path in runs {
        match lockbench_compare::load(path) {
            Ok(r) => loaded.push((path.display().to_string(), r)),
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    print!(
        "{}",
        lockbench_compare::scaling::markdown(&lockbench_compare::scaling::curves(&loaded))
    );
    ExitCode::SUCCESS
}
