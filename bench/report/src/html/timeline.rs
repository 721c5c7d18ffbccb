//! Throughput and acquire latency over time from the history, with every fault window
//! shaded and labelled (as Jepsen draws nemesis regions) and the warm-up greyed.
//!
//! Backends run one after another, each on its own clock starting at its first op, and a
//! scenario schedules its faults at the same offsets for every backend; so the comparison charts
//! of the first screen (`throughput_chart`, `p99_chart`) overlay all backends on "seconds since
//! the backend started", one y-scale each, with the fault windows of all backends shaded (the
//! same window once). The per-backend pairs (p50/p99/max) are folded detail.

use super::chart::{self, Drawn, Shade};
use super::load::Run;
use super::page;
use super::trace::Trace;
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::prelude::*;

const NS: f64 = 1e9;

/// The bucket width for a run `span_ns` long: 250 ms, or wider to keep at most ~240 buckets.
pub(crate) fn bucket_ns(span_ns: u64) -> u64 {
    let mut b = 250_000_000u64;
    for w in [250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000] {
        b = w * 1_000_000;
        if span_ns / b <= 240 {
            break;
        }
    }
    b
}

/// Picks one of (p50, p99, max).
type Pick = fn(&(f64, f64, f64)) -> f64;

/// One bucket: its middle (s), acquisitions/s, and p50/p99/max acquire latency (ms) if any.
pub(crate) struct Bucket {
    pub x: f64,
    pub rate: f64,
    pub lat: Option<(f64, f64, f64)>,
}

pub(crate) fn buckets(t: &Trace, width: u64) -> Vec<Bucket> {
    let end = t.grants.last_t();
    t.grants
        .per_bucket(width)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (n, lat))| {
            // The last bucket covers only part of its width: rate over what it covers, and
            // none at all when that is too little to mean anything.
            let covered = (end - i as u64 * width).min(width);
            if covered < width / 4 {
                return None;
            }
            let ms = |v: u64| v as f64 / 1e6;
            Some(Bucket {
                x: (i as u64 * width + covered / 2) as f64 / NS,
                rate: n as f64 * NS / covered.max(1) as f64,
                lat: lat.map(|(a, b, c)| (ms(a), ms(b), ms(c))),
            })
        })
        .collect()
}

/// The caption's note when the grants were folded into buckets (see [`super::grants`]).
pub(crate) fn folded_note(t: &Trace) -> String {
    if t.grants.folded() {
        format!(
            " {} acquisitions, over {}: percentiles read from a per-250 ms log histogram (within ~10%); counts and max exact.",
            t.grants.len(),
            super::grants::EXACT_CAP
        )
    } else {
        String::new()
    }
}

/// The section: one row of two charts per backend with a history.
pub(crate) fn section(run: &Run) -> Markup {
    let mut body = Vec::new();
    for (i, r) in run.results.results.iter().enumerate() {
        let Some(t) = run.traces.get(&r.backend).filter(|t| !t.grants.is_empty()) else {
            continue;
        };
        let width = bucket_ns(t.last_t);
        let bs = buckets(t, width);
        let x_hi = (t.grants.last_t() as f64 / NS).max(0.001);
        let shades = chart::shades(run.traces.faults_of(&r.backend), 0, NS, 0.0, x_hi);
        let (m0, _) = run.measured_window(t.first_t, t.last_t);
        let warm = m0 as f64 / NS;
        let c = chart::color(i);
        let thr = chart::svg(680, 270, |root| {
            throughput(root, &bs, x_hi, warm, &shades, c)
        });
        let lat = chart::svg(680, 270, |root| latency(root, &bs, x_hi, warm, &shades, c));
        let faults: Vec<_> = run.traces.faults_of(&r.backend).collect();
        body.push(html! {
            details {
                summary { (chart::swatch(i, &r.backend)) }
                div.pair {
                    (page::figure(
                        thr,
                        format!("Acquisitions per second, {} ms buckets.", width / 1_000_000),
                    ))
                    (page::figure(
                        lat,
                        format!(
                            "Acquire latency per bucket: p50 (thick), p99 (thin), max (pale); log scale.{}",
                            folded_note(t)
                        ),
                    ))
                }
                @if !faults.is_empty() {
                    table {
                        tr {
                            th { "fault" }
                            th { "targets" }
                            th { "from (s)" }
                            th { "to (s)" }
                            th { "applied" }
                            th { "note" }
                        }
                        @for f in faults {
                            tr {
                                td { (f.label) }
                                td { (f.targets) }
                                td.num { (format!("{:.3}", f.start as f64 / NS)) }
                                td.num {
                                    (f.end
                                        .map(|e| format!("{:.3}", e as f64 / NS))
                                        .unwrap_or_else(|| "never stopped".into()))
                                }
                                td {
                                    @if f.applied { "yes" } @else { b { "no" } }
                                }
                                td { (f.note) }
                            }
                        }
                    }
                }
            }
        });
    }
    let intro = if run.traces.faults.is_empty() {
        "Per backend (open one), on its own clock; the grey band is the warm-up. This run injected no faults."
    } else {
        "Per backend (open one), on its own clock; the grey band is the warm-up, purple bands are fault windows (pale when the fault could not be applied here), listed below each pair."
    };
    let body = html! {
        @for b in &body { (b) }
        @if body.is_empty() {
            (page::note("No acquisitions in the history."))
        }
    };
    page::section("timeline", "Each backend over time", intro, body)
}

pub(crate) fn warmup_band<Y: plotters::coord::ranged1d::Ranged<ValueType = f64>>(
    chart: &mut ChartContext<
        '_,
        SVGBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    warm: f64,
    y_lo: f64,
    y_hi: f64,
) -> Drawn {
    if warm > 0.0 {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y_lo), (warm, y_hi)],
            BLACK.mix(0.06).filled(),
        )))?;
    }
    Ok(())
}

fn throughput(
    root: &DrawingArea<SVGBackend, Shift>,
    bs: &[Bucket],
    x_hi: f64,
    warm: f64,
    shades: &[Shade],
    c: RGBColor,
) -> Drawn {
    let y_hi = chart::nice_ceil(bs.iter().map(|b| b.rate).fold(1.0, f64::max) * 1.1);
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(62)
        .build_cartesian_2d(0f64..x_hi, 0f64..y_hi)?;
    chart::house_mesh(&mut ch.configure_mesh(), 12)
        .x_desc("time (s)")
        .y_desc("acquisitions/s")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    warmup_band(&mut ch, warm, 0.0, y_hi)?;
    chart::draw_shades(&mut ch, shades, 0.0, y_hi)?;
    ch.draw_series(LineSeries::new(
        bs.iter().flat_map(|b| [(b.x, b.rate)]),
        c.stroke_width(2),
    ))?;
    Ok(())
}

fn latency(
    root: &DrawingArea<SVGBackend, Shift>,
    bs: &[Bucket],
    x_hi: f64,
    warm: f64,
    shades: &[Shade],
    c: RGBColor,
) -> Drawn {
    let vals = || bs.iter().filter_map(|b| b.lat);
    let hi = chart::nice_ceil(vals().map(|l| l.2).fold(0.001, f64::max));
    let lo_raw = vals()
        .map(|l| l.0)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let lo = if lo_raw.is_finite() {
        10f64.powf(lo_raw.log10().floor()).max(0.001)
    } else {
        0.001
    };
    let hi = if hi <= lo * 1.01 { lo * 10.0 } else { hi };
    let mut ch = ChartBuilder::on(root)
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(62)
        .build_cartesian_2d(
            0f64..x_hi,
            (lo..hi)
                .log_scale()
                .with_key_points(chart::log_ticks(lo, hi)),
        )?;
    chart::house_mesh(&mut ch.configure_mesh(), 12)
        .x_desc("time (s)")
        .y_desc("acquire latency (ms)")
        .y_label_formatter(&|y| chart::ms_label(*y))
        .draw()?;
    warmup_band(&mut ch, warm, lo, hi)?;
    chart::draw_shades(&mut ch, shades, lo, hi)?;
    let series: [(Pick, ShapeStyle); 3] = [
        (|l| l.2, c.mix(0.35).stroke_width(1)),
        (|l| l.1, c.stroke_width(1)),
        (|l| l.0, c.stroke_width(2)),
    ];
    for (pick, style) in series {
        ch.draw_series(LineSeries::new(
            bs.iter()
                .filter_map(|b| b.lat.as_ref().map(|l| (b.x, pick(l).max(lo)))),
            style,
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_stay_few() {
        assert_eq!(bucket_ns(5_000_000_000), 250_000_000);
        assert!(3_600_000_000_000 / bucket_ns(3_600_000_000_000) <= 240);
    }
}
