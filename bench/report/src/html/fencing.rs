//! The fencing-token staircase: the token of every write to the protected resource over time,
//! per key. Tokens only grow while mutual exclusion holds, so the points climb a staircase; a
//! stale write sits below the stair. A stale write the resource *accepted* (damage) is a red
//! cross, one it *rejected* (fencing worked) an orange triangle.

use super::chart::{self, BAD, Drawn, FENCED, Shade};
use super::load::Run;
use super::page;
use super::trace::Write;
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Ordinary writes drawn per chart; more are thinned evenly (stale ones are always drawn).
const MAX_POINTS: usize = 400;
/// Keys drawn per backend.
const MAX_KEYS: usize = 2;

/// The section.
pub(crate) fn section(run: &Run) -> Markup {
    let mut body = Vec::new();
    let mut unfenced = Vec::new();
    for (bi, r) in run.results.results.iter().enumerate() {
        let Some(t) = run.traces.get(&r.backend) else {
            continue;
        };
        if t.writes.is_empty() {
            if t.grants.is_empty() {
                continue;
            }
            unfenced.push(format!(
                "{} ({} unfenced writes)",
                r.backend, r.safety.unfenced_writes
            ));
            continue;
        }
        let mut keys: Vec<u32> = Vec::new();
        if let Some(w) = t.writes.iter().find(|w| w.stale) {
            keys.push(w.key);
        }
        for k in &t.keys {
            if keys.len() < MAX_KEYS && !keys.contains(k) && t.writes.iter().any(|w| w.key == *k) {
                keys.push(*k);
            }
        }
        let stale_acc = t.writes.iter().filter(|w| w.stale && w.accepted).count();
        let stale_rej = t.writes.iter().filter(|w| !w.accepted).count();
        let x_hi = (t.last_t as f64 / 1e9).max(0.001);
        let shades = chart::shades(run.traces.faults_of(&r.backend), 0, 1e9, 0.0, x_hi);
        let dropped = if t.writes_dropped > 0 {
            format!(
                " Only the first {} writes (and stale ones up to as many again) are kept for this chart; {} left out, the checkers saw every one.",
                super::trace::MAX_WRITES,
                t.writes_dropped
            )
        } else {
            String::new()
        };
        // Folded unless the resource accepted a stale write: damage is never hidden.
        body.push(html! {
            details open[stale_acc > 0] {
                summary {
                    (chart::swatch(bi, &r.backend)) " "
                    small {
                        (t.writes.len()) " writes; stale writes accepted: "
                        @if stale_acc > 0 {
                            b style="color:#d62728" { (stale_acc) }
                        } @else {
                            "0"
                        }
                        ", rejected: " (stale_rej) "."
                        @if t.keys.len() > keys.len() {
                            " Showing " (keys.len()) " of " (t.keys.len()) " keys."
                        }
                    }
                }
                @for key in keys {
                    @let writes: Vec<&Write> = t.writes.iter().filter(|w| w.key == key).collect();
                    @let base = writes.iter().map(|w| w.token).min().unwrap_or(0);
                    @let max = writes.iter().map(|w| w.token).max().unwrap_or(0);
                    // Large tokens (a ZooKeeper czxid carries the epoch in its high bits) are
                    // drawn relative to the first, so the axis labels stay short.
                    @let offset = if max >= 1_000_000 { base } else { 0 };
                    @let what = if offset > 0 { format!("token − {offset}") } else { "token".into() };
                    (page::figure(
                        chart::svg(1360, 300, |root| {
                            draw(root, &writes, offset, x_hi, &shades, chart::color(bi))
                        }),
                        format!("Key k{key}: {what} of each write over time (s on this backend's clock).{dropped}"),
                    ))
                }
            }
        });
    }
    let body = html! {
        @for b in &body { (b) }
        @if !unfenced.is_empty() {
            (page::note(format!(
                "No fencing tokens (the recipe has none, so the resource cannot judge its writes): {}.",
                unfenced.join(", ")
            )))
        }
        @if body.is_empty() && unfenced.is_empty() {
            (page::note("No writes in the history."))
        }
    };
    page::section(
        "fencing",
        "Fencing tokens",
        "The token each holder wrote to the protected resource. While mutual exclusion holds the tokens climb; a write below the stair is stale.",
        body,
    )
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    writes: &[&Write],
    offset: u64,
    x_hi: f64,
    shades: &[Shade],
    color: RGBColor,
) -> Drawn {
    let y = |w: &Write| (w.token - offset) as f64;
    let y_hi = writes.iter().map(|w| y(w)).fold(1.0, f64::max) * 1.05;
    let y_lo = writes
        .iter()
        .map(|w| y(w))
        .fold(f64::INFINITY, f64::min)
        .min(y_hi - 1.0);
    let y_lo = if y_lo.is_finite() {
        y_lo - (y_hi - y_lo) * 0.03
    } else {
        0.0
    };
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..x_hi, y_lo..y_hi)?;
    chart::house_mesh(&mut ch.configure_mesh(), 12)
        .x_desc("time (s)")
        .y_desc("fencing token")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    chart::draw_shades(&mut ch, shades, y_lo, y_hi)?;
    let fresh: Vec<&&Write> = writes.iter().filter(|w| !w.stale && w.accepted).collect();
    let step = fresh.len().div_ceil(MAX_POINTS).max(1);
    ch.draw_series(
        fresh
            .iter()
            .step_by(step)
            .map(|w| Circle::new((w.t as f64 / 1e9, y(w)), 2, color.filled())),
    )?
    .label("accepted")
    .legend(move |(x, y)| Circle::new((x + 8, y), 3, color.filled()));
    ch.draw_series(
        writes
            .iter()
            .filter(|w| !w.accepted)
            .map(|w| TriangleMarker::new((w.t as f64 / 1e9, y(w)), 5, FENCED.filled())),
    )?
    .label("stale, rejected")
    .legend(|(x, y)| TriangleMarker::new((x + 8, y), 5, FENCED.filled()));
    ch.draw_series(
        writes
            .iter()
            .filter(|w| w.stale && w.accepted)
            .map(|w| Cross::new((w.t as f64 / 1e9, y(w)), 5, BAD.stroke_width(2))),
    )?
    .label("stale, accepted")
    .legend(|(x, y)| Cross::new((x + 8, y), 5, BAD.stroke_width(2)));
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.2))
        .label_font(chart::font(12))
        .draw()?;
    Ok(())
}
