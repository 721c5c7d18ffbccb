//! Per-client fairness: acquisitions of each client slot in the measured window, one small bar
//! chart per backend, with Jain's index in the caption (1.0 = equal shares).

use super::chart::{self, Drawn};
use super::load::Run;
use super::page::{self, esc};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The section.
pub(crate) fn section(run: &Run) -> String {
    let mut body = String::from("<div class=\"grid\">\n");
    let mut any = false;
    for (i, r) in run.results.results.iter().enumerate() {
        if r.per_client_acquisitions.iter().all(|&n| n == 0) {
            continue;
        }
        any = true;
        let counts = &r.per_client_acquisitions;
        let svg = chart::svg(440, 240, |root| {
            draw(root, &r.backend, counts, chart::color(i))
        });
        let jain = r
            .fairness_jain
            .map(|j| format!("{j:.3}"))
            .unwrap_or_else(|| "-".into());
        body.push_str(&page::figure(
            &svg,
            &format!(
                "{}: Jain's index {jain}, {} clients.",
                esc(&r.backend),
                counts.len()
            ),
        ));
    }
    body.push_str("</div>\n");
    if !any {
        body = page::note("No per-client acquisitions in <code>results.json</code>.");
    }
    page::section(
        "fairness",
        "Per-client fairness",
        "Acquisitions per client slot in the measured window. Equal bars mean every client got its turn.",
        &body,
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
