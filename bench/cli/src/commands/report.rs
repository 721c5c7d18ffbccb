//! `lockbench report`, and the report every run writes at its end.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Writes `report.html` in `run_dir` and refreshes the index of its parent directory. A
/// report that cannot be drawn never fails the run: its results are already on disk.
pub fn render(run_dir: &Path) -> bool {
    match lockbench_report::html::write_report(run_dir) {
        Ok(page) => println!("report: {}", page.display()),
        Err(e) => {
            eprintln!("warning: no HTML report for {}: {e:#}", run_dir.display());
            return false;
        }
    }
    if let Some(root) = run_dir.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(e) = lockbench_report::html::write_index(root)
    {
        eprintln!(
            "warning: could not update {}/index.html: {e:#}",
            root.display()
        );
    }
    true
}

/// Re-renders the reports of finished runs.
pub fn run(run_dirs: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut ok = true;
    for dir in &run_dirs {
        if !dir.join("results.json").exists() {
            eprintln!(
                "error: {} has no results.json (is it a run directory?)",
                dir.display()
            );
            ok = false;
            continue;
        }
        ok &= render(dir);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
