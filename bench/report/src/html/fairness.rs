//! Per-client fairness: acquisitions of each client slot in the measured window, one small bar
//! chart per backend, with Jain's index in the caption (1.0 = equal shares).

use super::chart::{self, Drawn};
use super::load::Run;
use super::page;
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The section.
pub(crate) fn section(run: &Run) -> Markup {
    let drawn: Vec<_> = run
        .results
        .results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.per_client_acquisitions.iter().any(|&n| n > 0))
        .collect();
    let body = if drawn.is_empty() {
        page::note(html! { "No per-client acquisitions in " code { "results.json" } "." })
    } else {
        html! {
            div.grid {
                @for (i, r) in drawn {
                    @let counts = &r.per_client_acquisitions;
                    @let jain = r
                        .fairness_jain
                        .map(|j| format!("{j:.3}"))
                        .unwrap_or_else(|| "-".into());
                    (page::figure(
                        chart::svg(440, 240, |root| draw(root, &r.backend, counts, chart::color(i))),
                        format!("{}: Jain's index {jain}, {} clients.", r.backend, counts.len()),
                    ))
                }
            }
        }
    };
    page::section(
        "fairness",
        "Per-client fairness",
        "Acquisitions per client slot in the measured window. Equal bars mean every client got its turn.",
        body,
    )
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    name: &str,
    counts: &[u64],
    color: RGBColor,
) -> Drawn {
    let n = counts.len();
    let y_hi = chart::nice_ceil(counts.iter().copied().max().unwrap_or(1) as f64 * 1.05);
    let mut ch = ChartBuilder::on(root)
        .caption(name, chart::font(14))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(54)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..y_hi)?;
    chart::house_mesh(&mut ch.configure_mesh(), 11)
        .x_desc("client slot")
        .x_labels(n.min(16) + 1)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() > 1e-6 || *x < 0.0 {
                String::new()
            } else {
                format!("{x:.0}")
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    ch.draw_series(counts.iter().enumerate().map(|(i, &c)| {
        Rectangle::new(
            [(i as f64 - 0.38, 0.0), (i as f64 + 0.38, c as f64)],
            color.filled(),
        )
    }))?;
    Ok(())
}
