//! The scenario's expectations (`[expect]`), as `lockbench run` judged them: one row per
//! (backend, expectation) with its outcome and what it was judged on. The same judgement sets
//! the exit code, so a reader of the report sees why a CI job failed.

use super::load::Run;
use super::page;
use lockbench_results::expect::Outcome;
use maud::{Markup, html};

/// The section, or nothing when the scenario states no expectation.
pub(crate) fn section(run: &Run) -> Markup {
    let expectations = &run.results.expectations;
    if expectations.is_empty() {
        return html! {};
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
    let table = page::scroll_table(
        &["backend", "expected", "outcome", "judged on"],
        html! {
            @for e in expectations {
                tr {
                    td { (e.backend) }
                    td {
                        (e.expect)
                        @if e.implicit { " (implicit)" }
                    }
                    td {
                        @match e.outcome {
                            Outcome::Met => "met",
                            Outcome::Unknown => b { "UNKNOWN" },
                            Outcome::Failed => b style="color:#d62728" { "FAILED" },
                        }
                    }
                    td { (e.measured) }
                }
            }
        },
    );
    page::section("expectations", "Expectations", intro, table)
}
