//! The lock-holder timeline: per key, one row per client and a bar for every hold, from the
//! acquire's `ok` to the release's `invoke` (the span in which the client *believed* it held
//! the lock, as the mutual-exclusion checker reads it). Where holds of two clients overlap,
//! both bars are red and the overlap is banded in red across the rows.
//!
//! A long run has far too many holds to draw, so a readable window is shown: the start of the
//! measured window, the same span for every backend (up to 2 s, less when a backend is fast, so
//! hand-off gaps compare at one scale), plus a window of that span around the first overlap
//! when there is one; the caption says which.

use super::chart::{self, BAD, Drawn, Shade};
use super::load::Run;
use super::page;
use super::trace::Hold;
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeSet;

/// At most this many holds in a window.
const MAX_HOLDS: usize = 300;
/// At most this long a window, ns.
const MAX_WINDOW: u64 = 2_000_000_000;
/// Keys drawn per backend (the key of the first overlap always among them).
const MAX_KEYS: usize = 2;

/// Two clients holding the same key at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Overlap {
    pub key: u32,
    pub start: u64,
    pub end: u64,
}

/// Which holds (indices into `holds`, sorted by start) overlap a hold of another client on the
/// same key, and the overlaps themselves in time order.
pub(crate) fn overlaps(holds: &[Hold]) -> (Vec<bool>, Vec<Overlap>) {
    let mut flagged = vec![false; holds.len()];
    let mut found = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    for (i, h) in holds.iter().enumerate() {
        active.retain(|&j| holds[j].end > h.start);
        for &j in &active {
            let o = &holds[j];
            if o.key == h.key && o.client != h.client {
                flagged[i] = true;
                flagged[j] = true;
                found.push(Overlap {
                    key: h.key,
                    start: h.start,
                    end: h.end.min(o.end),
                });
            }
        }
        active.push(i);
    }
    (flagged, found)
}

/// The length of the window starting at `from` that holds at most `MAX_HOLDS` holds and
/// `MAX_WINDOW` ns.
fn window_len(holds: &[&Hold], from: u64, last: u64) -> u64 {
    let later: Vec<&&Hold> = holds.iter().filter(|h| h.start >= from).collect();
    let mut end = (from + MAX_WINDOW).min(last);
    if later.len() > MAX_HOLDS {
        end = end.min(later[MAX_HOLDS - 1].end);
    }
    end.saturating_sub(from).max(1_000_000)
}

/// One backend's holds as the section draws them.
struct Plan<'a> {
    bi: usize,
    backend: &'a str,
    holds: &'a [Hold],
    flagged: Vec<bool>,
    found: Vec<Overlap>,
    keys: Vec<u32>,
    all_keys: usize,
    /// Start of the measured window on this backend's clock (where its first chart starts).
    from: u64,
    /// Holds the trace left out (see `trace::MAX_HOLDS`).
    dropped: u64,
}

/// The caption's note when the trace kept only the first holds.
fn dropped_note(dropped: u64) -> String {
    if dropped == 0 {
        return String::new();
    }
    format!(
        " Only the first {} holds of the run are kept for these charts ({dropped} later ones left out); the checkers saw every one.",
        super::trace::MAX_HOLDS
    )
}

/// The section. Every backend's chart shows the same span from the start of its measured
/// window (the span the fastest backend fills with `MAX_HOLDS` holds, at most `MAX_WINDOW`), so
/// hand-off gaps compare at one scale; a backend that broke mutual exclusion adds a chart of
/// the same span around its first overlap, and is unfolded.
pub(crate) fn section(run: &Run) -> Markup {
    let mut plans = Vec::new();
    for (bi, r) in run.results.results.iter().enumerate() {
        let Some(t) = run.traces.get(&r.backend).filter(|t| !t.holds.is_empty()) else {
            continue;
        };
        let (flagged, found) = overlaps(&t.holds);
        let (m0, _) = run.measured_window(t.first_t, t.last_t);
        let mut keys: Vec<u32> = Vec::new();
        if let Some(o) = found.first() {
            keys.push(o.key);
        }
        for k in &t.keys {
            if keys.len() >= MAX_KEYS {
                break;
            }
            if !keys.contains(k) && t.holds.iter().any(|h| h.key == *k) {
                keys.push(*k);
            }
        }
        let from = if t.holds.iter().any(|h| h.start >= m0) {
            m0
        } else {
            t.holds[0].start
        };
        plans.push(Plan {
            bi,
            backend: &r.backend,
            holds: &t.holds,
            flagged,
            found,
            keys,
            all_keys: t.keys.len(),
            from,
            dropped: t.holds_dropped,
        });
    }
    let span = plans
        .iter()
        .flat_map(|p| {
            p.keys.iter().map(|&k| {
                let holds: Vec<&Hold> = p.holds.iter().filter(|h| h.key == k).collect();
                let last = holds.iter().map(|h| h.end).max().unwrap_or(p.from);
                window_len(&holds, p.from, last)
            })
        })
        .min()
        .unwrap_or(MAX_WINDOW);

    let mut body = Vec::new();
    for p in &plans {
        let mut charts = Vec::new();
        for &key in &p.keys {
            let idx: Vec<usize> = (0..p.holds.len())
                .filter(|&i| p.holds[i].key == key)
                .collect();
            let mut windows = vec![((p.from, p.from + span), "start of the measured window")];
            if let Some(o) = p.found.iter().find(|o| o.key == key)
                && (o.start < p.from || o.start > p.from + span)
            {
                let w0 = o.start.saturating_sub(span / 2);
                windows.push(((w0, w0 + span), "around the first overlap"));
            }
            for ((w0, w1), what) in windows {
                let bars: Vec<(Hold, bool)> = idx
                    .iter()
                    .filter(|&&i| p.holds[i].end >= w0 && p.holds[i].start <= w1)
                    .map(|&i| (p.holds[i], p.flagged[i]))
                    .collect();
                let bands: Vec<Overlap> = p
                    .found
                    .iter()
                    .filter(|o| o.key == key && o.end >= w0 && o.start <= w1)
                    .copied()
                    .collect();
                let shades = chart::shades(
                    run.traces.faults_of(p.backend),
                    0,
                    1e6,
                    w0 as f64 / 1e6,
                    w1 as f64 / 1e6,
                );
                let svg = draw_svg(&bars, &bands, (w0, w1), &shades, chart::color(p.bi));
                let red = bars.iter().filter(|b| b.1).count();
                let window = format!(
                    "Key k{key}, {what}: {:.3} s to {:.3} s on this backend's clock ({} holds",
                    w0 as f64 / 1e9,
                    w1 as f64 / 1e9,
                    bars.len()
                );
                charts.push(page::figure(
                    svg,
                    html! {
                        (window)
                        @if red > 0 {
                            ", " b style="color:#d62728" { (red) " overlapping" }
                        }
                        "). Bars run from acquire ok to release invoke; at least 2 px wide."
                        (dropped_note(p.dropped))
                    },
                ));
            }
        }
        let keys = p.keys.iter().map(|k| format!("k{k}")).collect::<Vec<_>>();
        body.push(html! {
            details open[!p.found.is_empty()] {
                summary {
                    (chart::swatch(p.bi, p.backend)) " "
                    small {
                        @if let Some(first) = p.found.first() {
                            b style="color:#d62728" { (p.found.len()) " overlapping hold(s)" }
                            (format!("; the first at {:.3} s on key k{}", first.start as f64 / 1e9, first.key))
                        } @else {
                            "no overlapping holds"
                        }
                    }
                }
                @if p.all_keys > p.keys.len() {
                    (page::note(format!("Showing key(s) {} of {} keys.", keys.join(", "), p.all_keys)))
                }
                @for c in charts { (c) }
            }
        });
    }
    let body = if body.is_empty() {
        page::note("No holds in the history.")
    } else {
        html! { @for b in body { (b) } }
    };
    page::section(
        "holders",
        "Lock holders",
        format!(
            "Who believed they held each lock, and when: one row per client, one bar per hold; two bars over the same instant in different rows would be two holders at once, drawn in red. Every chart spans the same {:.1} ms, from the start of each backend's measured window.",
            span as f64 / 1e6
        ),
        body,
    )
}

fn draw_svg(
    bars: &[(Hold, bool)],
    bands: &[Overlap],
    window: (u64, u64),
    shades: &[Shade],
    color: RGBColor,
) -> Markup {
    let clients: Vec<u32> = bars
        .iter()
        .map(|b| b.0.client)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rows = clients.len().max(1);
    let row_px = (420 / rows).clamp(6, 24) as u32;
    let h = 90 + row_px * rows as u32;
    chart::svg(1360, h, |root| {
        draw(root, bars, bands, window, shades, color, &clients)
    })
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    bars: &[(Hold, bool)],
    bands: &[Overlap],
    (w0, w1): (u64, u64),
    shades: &[Shade],
    color: RGBColor,
    clients: &[u32],
) -> Drawn {
    let rows = clients.len().max(1);
    let x0 = w0 as f64 / 1e6;
    let x1 = (w1 as f64 / 1e6).max(x0 + 0.001);
    let row_of = |c: u32| clients.iter().position(|&x| x == c).unwrap_or(0);
    // Row r is centred on y = rows - 1 - r, so the first client is at the top.
    let y_of = |row: usize| (rows - 1 - row) as f64;
    let (y_lo, y_hi) = (-0.5, rows as f64 - 0.5);
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(x0..x1, y_lo..y_hi)?;
    ch.configure_mesh()
        .x_desc("time (ms on this backend's clock)")
        .x_label_formatter(&|x| chart::num_label(*x, x1 - x0))
        .y_desc("client")
        .y_labels(rows.min(30) + 1)
        .y_label_formatter(&|y| {
            if (y - y.round()).abs() > 1e-6 || *y < 0.0 {
                return String::new();
            }
            let row = rows - 1 - (y.round() as usize).min(rows - 1);
            clients
                .get(row)
                .map(|c| format!("c{c}"))
                .unwrap_or_default()
        })
        .label_style(chart::font(12))
        .axis_desc_style(chart::font(13))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.06))
        .draw()?;
    chart::draw_shades(&mut ch, shades, y_lo, y_hi)?;
    ch.draw_series(bands.iter().map(|o| {
        let s = (o.start as f64 / 1e6).max(x0);
        let e = (o.end as f64 / 1e6).min(x1).max(s + (x1 - x0) / 700.0);
        Rectangle::new([(s, y_lo), (e, y_hi)], BAD.mix(0.15).filled())
    }))?;
    let min_w = (x1 - x0) / 680.0;
    ch.draw_series(bars.iter().map(|(h, bad)| {
        let y = y_of(row_of(h.client));
        let s = (h.start as f64 / 1e6).max(x0);
        let e = (h.end as f64 / 1e6).min(x1).max(s + min_w);
        let style = if *bad {
            BAD.filled()
        } else if h.released {
            color.filled()
        } else {
            color.mix(0.45).filled()
        };
        Rectangle::new([(s, y - 0.35), (e, y + 0.35)], style)
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(client: u32, start: u64, end: u64) -> Hold {
        Hold {
            client,
            key: 0,
            start,
            end,
            released: true,
        }
    }

    #[test]
    fn overlapping_holds_of_two_clients_are_flagged_and_same_client_is_not() {
        let holds = [
            hold(1, 0, 10),
            hold(2, 5, 20),
            hold(2, 30, 40),
            hold(3, 40, 50),
        ];
        let (flagged, found) = overlaps(&holds);
        assert_eq!(flagged, vec![true, true, false, false]);
        assert_eq!(
            found,
            vec![Overlap {
                key: 0,
                start: 5,
                end: 10
            }]
        );
    }
}
