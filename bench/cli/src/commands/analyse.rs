//! `lockbench analyse`: prints the verdicts of the analysis pass run again over run
//! directories' histories (`lockbench_runner::reanalysis`).

use lockbench_runner::reanalysis::Validity;
use std::path::PathBuf;
use std::process::ExitCode;

/// Analyses each run directory and prints, per backend, its verdict and every checker's.
pub fn run(run_dirs: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut worst = Validity::Valid;
    for dir in &run_dirs {
        println!("{}:", dir.display());
        let backends = match lockbench_runner::reanalysis::analyse(dir) {
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
