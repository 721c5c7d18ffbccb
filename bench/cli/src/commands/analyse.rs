//! `lockbench analyse`: prints the verdicts of the analysis pass run again over run
//! directories' histories (`lockbench_analysis::reanalysis`).

use lockbench_analysis::Validity;
use lockbench_analysis::reanalysis::{self, Reanalysed};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Analyses each run directory and prints, per backend, its verdict and every checker's.
pub fn run(run_dirs: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut worst = Validity::Valid;
    for dir in &run_dirs {
        println!("{}:", dir.display());
        let backends = match analyse(dir) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {}: {e:#}", dir.display());
                worst = worst.max(Validity::Unknown);
                continue;
            }
        };
        for b in &backends {
            let verdict = b.verdict();
            worst = worst.max(verdict);
            println!(
                "  {:<14} {:<8} ({} ops)",
                b.backend.name(),
                verdict.name(),
                b.ops
            );
            if b.ops == 0 {
                println!("    no op of this backend in the history");
            }
            for o in &b.outcomes {
                let note = o
                    .note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default();
                println!("    {:<14} {}{note}", o.name, o.validity.name());
            }
        }
    }
    Ok(ExitCode::from(match worst {
        Validity::Valid => 0,
        Validity::Invalid => 1,
        Validity::Unknown => 2,
    }))
}

/// Reads `run_dir`'s scenario (the run's own copy) and runs the pass over its history.
fn analyse(run_dir: &Path) -> anyhow::Result<Vec<Reanalysed>> {
    let scenario_path = run_dir.join("scenario.toml");
    let text = std::fs::read_to_string(&scenario_path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {}: {e} (is {} a run directory?)",
            scenario_path.display(),
            run_dir.display()
        )
    })?;
    let scenario =
        lockbench_registry::load_scenario(&scenario_path.display().to_string(), &text, &[])
            .map_err(|e| anyhow::anyhow!(e))?;
    Ok(reanalysis::analyse(run_dir, &scenario)?)
}
