//! The first screen: one chart per metric comparing every backend on one scale, so "which
//! backend, how fast, under which faults" is answered before any scrolling; the summary table
//! right below it says whether each stayed safe. The legend is shared HTML above the charts
//! (never drawn over data), and the colours are the same in every chart of the page.
//!
//! `top` is the row above the summary (throughput over time with the fault windows, and the
//! acquire latency spectrum); `more` the row below it (hand-off spectrum, acquire p99 over
//! time).

use super::chart;
use super::load::Run;
use super::overlay;
use super::page;
use super::spectrum;
use maud::{Markup, html};

/// Chart size: two side by side fill a 1280 px wide window.
const W: u32 = 640;
const H: u32 = 270;

fn pair(cells: [Option<(Markup, Markup)>; 2]) -> Markup {
    html! {
        div.pair {
            @for c in cells {
                div {
                    @match c {
                        Some((svg, caption)) => (page::figure(svg, caption)),
                        None => (page::note("No samples for this chart.")),
                    }
                }
            }
        }
    }
}

fn spectrum(run: &Run, metric: &str, title: &str, what: &str) -> Option<(Markup, Markup)> {
    spectrum::chart(run, metric, title, W, H).map(|svg| {
        (
            svg,
            html! {
                (what) "; the dot is each backend's maximum (" code { "histograms/*." (metric) ".hdr" } ")."
            },
        )
    })
}

/// The comparison charts above the summary table.
pub(crate) fn top(run: &Run) -> Markup {
    html! {
        section id="glance" {
            (chart::legend(run.results.results.iter().map(|r| r.backend.as_str())))
            (pair([
                overlay::throughput_chart(run, W, H),
                spectrum(
                    run,
                    "acquire",
                    "Acquire latency (ms) by percentile",
                    "Acquire latency from the intended start, every sample",
                ),
            ]))
        }
    }
}

/// The comparison charts below the summary table.
pub(crate) fn more(run: &Run) -> Markup {
    let body = pair([
        spectrum(
            run,
            "handoff",
            "Hand-off latency (ms) by percentile",
            "Hand-off: a release done to the next grant on that key",
        ),
        overlay::p99_chart(run, W, H),
    ]);
    page::section(
        "spectrum",
        "Latency, all backends",
        "Read across at a percentile to compare backends; a line that rises steeply at the right has a long tail.",
        body,
    )
}
