//! The self-contained HTML report: `report.html` in a run directory, `index.html` over runs.
//!
//! The report is a *rendering of the files a run leaves on disk* (`results.json`,
//! `scenario.toml`, `history.jsonl.zst`, `histograms/*.hdr`), never of the runner's in-memory
//! structs. That keeps it decoupled from the runner and lets `lockbench report <RUN_DIR>`
//! re-render any old run, including one that was interrupted. It is one file with inline SVG
//! charts drawn by `plotters` and inline CSS: no JavaScript, no network, no external assets, so
//! it can be attached to a CI run or mailed and still open years later.
//!
//! The markup is written with `maud`'s `html!`: it escapes every value it inserts (only
//! plotters' SVG and the page's own stylesheet go in as `PreEscaped`), and it checks the markup
//! at compile time, so a name or a note from `results.json` cannot become markup.
//!
//! The history is read leniently: lines that are neither ops nor fault events (or that a newer
//! lockbench added with a shape this one does not know) are skipped and counted, never fatal,
//! and fields of `results.json` this renderer has no special view for are shown as generic
//! tables, so new results (scorecard, fan-out, failover) appear before they get a chart.
//!
//! The module list is a map of the page: `load` reads the run directory, `trace` turns the
//! history into per-backend series, `page` is the layout and CSS, `summary` and `scorecard`
//! the tables, `truth` the server-side truth table, `failover` the leader-election table, `extras` whatever else `results.json`
//! holds; `glance` the first screen's comparison charts (`spectrum` and `overlay` draw them:
//! every backend on one chart and one scale), `timeline`, `gantt`, `fencing`, `fairness` and
//! `fanout` (the herd workload) the per-backend charts (sharing `chart`), `resources` what each
//! run cost in CPU and memory, `capacity` a sweep's sizing table and throughput-latency curves,
//! `index` the list of runs.
//!
//! The page is built to answer at a glance: the first screen (1280 x 900) holds the verdict,
//! the comparison charts and the summary table with each backend's safety verdict; per-backend
//! detail is folded in `<details>` (no JavaScript), and every chart's legend sits outside its
//! plot area.

mod capacity;
mod chart;
mod decision;
mod excerpts;
mod expectations;
mod extras;
mod failover;
mod fairness;
mod fanout;
mod fencing;
mod gantt;
mod glance;
mod grants;
mod index;
mod load;
mod overlay;
mod page;
mod resources;
mod scorecard;
mod spectrum;
mod summary;
mod timeline;
mod trace;
mod truth;

use anyhow::Context;
use maud::html;
use std::path::{Path, PathBuf};

pub use index::{Extra, write_index, write_index_with};
pub(crate) use page::ms as ms_text;

/// The verdict suite's page.
pub(crate) fn decision_page(d: &lockbench_results::decision::Decision) -> String {
    decision::render(d)
}

/// Reads the finished (or interrupted) run in `run_dir` and writes `run_dir/report.html`,
/// returning its path.
pub fn write_report(run_dir: &Path) -> anyhow::Result<PathBuf> {
    let run = load::Run::read(run_dir)?;
    let html = render(&run);
    let path = run_dir.join("report.html");
    let tmp = run_dir.join("report.html.tmp");
    std::fs::write(&tmp, html).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The whole page for one run.
fn render(run: &load::Run) -> String {
    let body = html! {
        (summary::header(run))
        (glance::top(run))
        (summary::table(run))
        (expectations::section(run))
        (scorecard::section(run))
        (truth::section(run))
        (failover::section(run))
        (capacity::section(run))
        (glance::more(run))
        (summary::recipes(run))
        (extras::section(run))
        (timeline::section(run))
        (gantt::section(run))
        (excerpts::section(run))
        (fencing::section(run))
        (fairness::section(run))
        (resources::section(run))
        (fanout::section(run))
        (summary::environment(run))
    };
    let title = format!(
        "lockbench: {} ({})",
        run.results.scenario, run.results.started_at
    );
    page::document(&title, body)
}
