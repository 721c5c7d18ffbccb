//! `lockbench report`, and the report every run writes at its end.

use crate::cli::{ReportArgs, ReportFormat};
use anyhow::Context;
use lockbench_results::RunResults;
use std::path::Path;
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

/// Re-renders the reports of finished runs (and their CSV and JUnit files), or prints one
/// run as CSV or JUnit XML.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let [dir] = args.run_dirs.as_slice()
        && args.site.is_none()
        && dir.join(lockbench_report::decision::FILE).exists()
    {
        return suite(dir, args.format);
    }
    if args.format != ReportFormat::Html {
        if args.site.is_some() {
            anyhow::bail!("--site writes HTML: leave out --format, or give it as html");
        }
        let [dir] = args.run_dirs.as_slice() else {
            anyhow::bail!("--format csv, junit and markdown print one run: give one run directory");
        };
        let results = load(dir)?;
        let text = match args.format {
            ReportFormat::Csv => lockbench_report::summary_csv::render(&results)?,
            ReportFormat::Markdown => lockbench_report::summary_md::render(&results),
            ReportFormat::Junit | ReportFormat::Html => lockbench_report::junit::render(&results)?,
        };
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut ok = true;
    for dir in &args.run_dirs {
        if dir.join(lockbench_report::decision::FILE).exists() {
            if let Err(e) = suite(dir, ReportFormat::Html) {
                eprintln!("error: {e:#}");
                ok = false;
            }
            continue;
        }
        let results = match load(dir) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e:#}");
                ok = false;
                continue;
            }
        };
        if let Err(e) = lockbench_report::run_dir::write_for_ci(dir, &results) {
            eprintln!("error: {e:#}");
            ok = false;
        }
        ok &= render(dir);
    }
    if let Some(out) = &args.site {
        if !ok {
            anyhow::bail!("no site written: a run above could not be read or rendered");
        }
        let site = lockbench_report::site::write_site(out, &args.run_dirs)?;
        println!(
            "site: {} ({} run(s), {} comparison(s))",
            site.index.display(),
            site.runs,
            site.comparisons.len()
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The run directory's results.json.
fn load(dir: &Path) -> anyhow::Result<RunResults> {
    let path = dir.join("results.json");
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "{} has no results.json (is it a run directory?)",
            dir.display()
        )
    })?;
    serde_json::from_slice(&bytes).with_context(|| format!("cannot read {}", path.display()))
}

/// Re-renders a verdict suite's page and summary from its `verdict.json` (its parts' own
/// reports are runs: give their directories), or prints its summary as Markdown.
fn suite(dir: &std::path::Path, format: ReportFormat) -> anyhow::Result<ExitCode> {
    let decision = lockbench_report::decision::read(dir)?;
    match format {
        ReportFormat::Markdown => print!("{}", lockbench_report::decision::markdown(&decision)),
        ReportFormat::Html => {
            let page = lockbench_report::decision::write(dir, &decision)?;
            println!("report: {}", page.display());
        }
        ReportFormat::Csv | ReportFormat::Junit => anyhow::bail!(
            "{} is a suite: --format csv and junit print one run; give one of its parts \
             (e.g. {}/shape-8x1)",
            dir.display(),
            dir.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
