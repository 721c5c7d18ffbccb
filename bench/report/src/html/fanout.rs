//! Notification fan-out (the herd workload): per release, the notifications lockbench counted
//! where each client library handed them over, the servers' own count beside it, the wake-ups
//! that were wasted and the requests they caused. One grouped bar chart over the recipes and a
//! table with the exact figures and each recipe's hand-off latency, because the point of the
//! herd comparison is the *ratio* between recipes (1 vs N) and the cost it carries.

use super::chart::{self, Drawn};
use super::load::Run;
use super::page;
use lockbench_results::model::{BackendResult, Fanout};
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The bars of one recipe, in legend order.
const SERIES: [&str; 4] = [
    "notifications (lockbench)",
    "notifications (servers)",
    "wasted wake-ups",
    "requests in reaction",
];

fn bars(r: &BackendResult) -> Option<[f64; 4]> {
    let f = r.fanout.as_ref()?;
    Some([
        f.notifications_per_release.unwrap_or(0.0),
        f.server_notifications_per_release.unwrap_or(0.0),
        f.wasted_wakeups_per_release.unwrap_or(0.0),
        f.server_requests_per_release.unwrap_or(0.0),
    ])
}

/// The section; empty when no result has `fanout`.
pub(crate) fn section(run: &Run) -> Markup {
    let rows: Vec<Row> = run
        .results
        .results
        .iter()
        .filter_map(|r| Some((r, r.fanout.as_ref()?, bars(r)?)))
        .collect();
    if rows.is_empty() {
        return html! {};
    }
    let svg = chart::svg(760, 300, |root| draw(root, &rows));
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    let sources: Vec<String> = rows
        .iter()
        .filter(|(_, f, _)| !f.server_source.is_empty())
        .map(|(r, f, _)| format!("{}: {}", r.backend, f.server_source))
        .collect();
    let body = html! {
        (page::figure(svg, "Per release, every recipe of the herd run."))
        table {
            tr {
                th { "recipe" }
                th { "releases" }
                th { "notifications / release" br; "lockbench | servers" }
                th { "wasted / release" }
                th { "requests / release" }
                th { "server watches mid-run" }
                th { "hand-off p50" }
            }
            @for (r, f, _) in &rows {
                tr {
                    td { (r.backend) }
                    td { (f.releases) }
                    td {
                        (num(f.notifications_per_release)) " | "
                        (num(f.server_notifications_per_release))
                    }
                    td { (num(f.wasted_wakeups_per_release)) }
                    td { (num(f.server_requests_per_release)) }
                    td { (f.server_watches_mid_run.map_or("-".to_string(), |w| w.to_string())) }
                    td {
                        (r.handoff_latency_us
                            .as_ref()
                            .map_or("-".to_string(), |p| page::ms(p.p50)))
                    }
                }
            }
        }
        (page::note(format!("Server counts: {}", sources.join("; "))))
    };
    page::section(
        "fanout",
        "Notification fan-out per release",
        "How many waiters one release wakes (a predecessor watch: 1; a watch on the whole lock \
         or a pub/sub channel: every waiter), how many of them wake for nothing, and the \
         requests they send in reaction. Polling recipes count each retry as a wake-up.",
        body,
    )
}

/// One recipe of the chart: its result, its fan-out figures and its bars.
type Row<'a> = (&'a BackendResult, &'a Fanout, [f64; 4]);

fn draw(root: &DrawingArea<SVGBackend, Shift>, rows: &[Row]) -> Drawn {
    let n = rows.len();
    let hi = rows
        .iter()
        .flat_map(|(_, _, b)| b.iter().copied())
        .fold(1.0f64, f64::max);
    // Headroom above the tallest bar for the legend.
    let y_hi = chart::nice_ceil(hi * 1.45);
    let mut ch = ChartBuilder::on(root)
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(54)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..y_hi)?;
    let names: Vec<String> = rows.iter().map(|(r, _, _)| r.backend.clone()).collect();
    chart::house_mesh(&mut ch.configure_mesh(), 11)
        .y_desc("per release")
        .x_labels(n + 1)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            names.get(i as usize).cloned().unwrap_or_default()
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    let width = 0.8 / SERIES.len() as f64;
    for (s, label) in SERIES.iter().enumerate() {
        let color = chart::color(s);
        ch.draw_series(rows.iter().enumerate().map(|(i, (_, _, b))| {
            let x0 = i as f64 - 0.4 + s as f64 * width;
            Rectangle::new([(x0, 0.0), (x0 + width * 0.9, b[s])], color.filled())
        }))?
        .label(*label)
        .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], color.filled()));
    }
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(chart::font(11))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.2))
        .draw()?;
    Ok(())
}
