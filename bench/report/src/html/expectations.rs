//! The scenario's expectations (`[expect]`), as `lockbench run` judged them: one row per
//! (backend, expectation) with its outcome and what it was judged on. The same judgement sets
//! the exit code, so a reader of the report sees why a CI job failed.

use super::load::Run;
use super::page::{self, esc};
use lockbench_results::expect::Outcome;

/// The section, or nothing when the scenario states no expectation.
pub(crate) fn section(run: &Run) -> String {
    let expectations = &run.results.expectations;
    if expectations.is_empty() {
        return String::new();
    }
    let mut rows = String::new();
    for e in expectations {
        let outcome = match e.outcome {
            Outcome::Met => "met".to_string(),
            Outcome::Unknown => "<b>UNKNOWN</b>".to_string(),
            Outcome::Failed => "<b style=\"color:#d62728\">FAILED</b>".to_string(),
        };
        let expect = if e.implicit {
            format!("{} (implicit)", esc(&e.expect))
        } else {
            esc(&e.expect)
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{expect}</td><td>{outcome}</td><td>{}</td></tr>\n",
            esc(&e.backend),
            esc(&e.measured),
        ));
    }
    let failed = expectations
        .iter()
        .filter(|e| e.outcome == Outcome::Failed)
        .count();
    let unknown = expectations
        .iter()
        .filter(|e| e.outcome == Outcome::Unknown)
        .count();
    let intro = format!(
        "What the scenario's [expect] table promised, judged on this run: {} met, {failed} failed, {unknown} unknown. A failed expectation makes `lockbench run` exit 1, an unknown one 2.",
        expectations.len() - failed - unknown
    );
    let table = format!(
        "<div class=\"scroll\"><table>\n<tr><th>backend</th><th>expected</th><th>outcome</th><th>judged on</th></tr>\n{rows}</table></div>\n"
    );
    page::section("expectations", "Expectations", &intro, &table)
}
