//! A run's summary as Markdown (`lockbench report --format markdown`), for a CI system's job
//! summary (`$GITHUB_STEP_SUMMARY`) or a pull request: the headline, the summary table of the
//! terminal with the same columns and figures, and what produced the run.

use crate::table::{HEADER, row};
use lockbench_results::headline;
use lockbench_results::model::RunResults;
use std::fmt::Write;

/// The whole summary.
pub fn render(results: &RunResults) -> String {
    let h = headline::of(results);
    let mut out = format!(
        "### lockbench `{}`: {}\n\n",
        results.scenario,
        h.title_line()
    );
    for line in h.lines().into_iter().skip(1) {
        let _ = writeln!(out, "- {}", cell(&line));
    }
    out.push('\n');
    let _ = writeln!(out, "| {} |", HEADER.map(cell).join(" | "));
    // The figures right-aligned; the backend, N/K and safety columns left.
    let last = HEADER.len() - 1;
    let align: Vec<&str> = (0..HEADER.len())
        .map(|i| if i < 2 || i == last { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for r in &results.results {
        let Some(mut cells) = row(r) else { continue };
        cells.resize(HEADER.len(), String::new());
        let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    let e = &results.environment;
    let load =
        |l: Option<[f64; 3]>| l.map_or("not recorded".to_string(), |[one, ..]| format!("{one:.2}"));
    let _ = writeln!(
        out,
        "\nLatencies in ms (acquire: from intended start); req/acq: lockbench's count | the \
         servers' own counters. lockbench {}, seed {}, started {}, cluster {}, {} CPUs, load \
         average {} at the start and {} at the end.",
        e.lockbench_version,
        results.seed,
        results.started_at,
        results.cluster,
        e.cpus,
        load(e.load_average),
        load(e.load_average_end),
    );
    out
}

/// `text` safe in a table cell or a list item: `|` escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
