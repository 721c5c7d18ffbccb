//! The comparison charts over time: every backend's throughput (and acquire p99) per bucket on
//! one chart and one y-scale, x in seconds since each backend's first op, every fault window
//! shaded. Backends run one after another, each on its own clock, but a scenario schedules its
//! faults at the same offsets for each, so the overlay lines them up; windows of one kind that
//! overlap across backends are merged into one band labelled with the kind (per-backend targets
//! and exact windows are in each backend's folded detail).
//!
//! The throughput axis turns logarithmic when the backends' typical rates differ more than 20x
//! (Redis runs thousands of acquisitions per second, etcd hundreds), so the slow ones are not a
//! flat line at zero; the caption says which scale was used.

use super::chart::{self, Drawn, Shade};
use super::load::Run;
use super::timeline::{self, Bucket};
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

const NS: f64 = 1e9;

/// Every backend with acquisitions: (colour index, buckets); the bucket width; x end (s); the
/// end of the warm-up (s); the fault shades.
struct Overlay {
    lines: Vec<(usize, Vec<Bucket>)>,
    width_ms: u64,
    x_hi: f64,
    warm: f64,
    shades: Vec<Shade>,
}

fn overlay(run: &Run) -> Option<Overlay> {
    let traces: Vec<(usize, &super::trace::Trace)> = run
        .results
        .results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            run.traces
                .get(&r.backend)
                .filter(|t| !t.grants.is_empty())
                .map(|t| (i, t))
        })
        .collect();
    if traces.is_empty() {
        return None;
    }
    let span = traces.iter().map(|(_, t)| t.last_t).max().unwrap_or(0);
    let width = timeline::bucket_ns(span);
    let x_hi = traces
        .iter()
        .map(|(_, t)| t.grants.last_t() as f64 / NS)
        .fold(0.001, f64::max);
    let warm = traces
        .iter()
        .map(|(_, t)| run.measured_window(t.first_t, t.last_t).0 as f64 / NS)
        .fold(0.0, f64::max);
    let shades = merged_shades(run, x_hi);
    Some(Overlay {
        lines: traces
            .iter()
            .map(|(i, t)| (*i, timeline::buckets(t, width)))
            .collect(),
        width_ms: width / 1_000_000,
        x_hi,
        warm,
        shades,
    })
}

/// A fault kind, whether any of its windows was applied, and its windows (s).
type KindSpans = (String, bool, Vec<(f64, f64)>);

/// The fault windows of every backend, merged per fault kind: windows of one kind that overlap
/// (the same scheduled fault, or a pause after each grant landing at different times per
/// backend) become one band, labelled with the kind once, at its first band. Labels with
/// targets would differ per backend (each has its own leader) and stack into a smear.
fn merged_shades(run: &Run, x_hi: f64) -> Vec<Shade> {
    let mut by_kind: Vec<KindSpans> = Vec::new();
    for f in &run.traces.faults {
        let Some(backend) = f.backend.as_deref() else {
            continue;
        };
        let x0 = f.start as f64 / NS;
        let x1 = f.end.map(|e| e as f64 / NS).unwrap_or(x_hi).min(x_hi);
        if x0 > x_hi || run.traces.get(backend).is_none() {
            continue;
        }
        match by_kind.iter_mut().find(|(k, _, _)| *k == f.fault) {
            Some((_, applied, spans)) => {
                *applied |= f.applied;
                spans.push((x0, x1));
            }
            None => by_kind.push((f.fault.clone(), f.applied, vec![(x0, x1)])),
        }
    }
    let mut out = Vec::new();
    for (kind, applied, mut spans) in by_kind {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::new();
        for (a, b) in spans {
            match merged.last_mut() {
                Some(last) if a <= last.1 + 0.25 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        for (i, (x0, x1)) in merged.into_iter().enumerate() {
            out.push(Shade {
                x0,
                x1,
                label: match (i, applied) {
                    (0, true) => kind.clone(),
                    (0, false) => format!("{kind} (not applied)"),
                    _ => String::new(),
                },
                applied,
            });
        }
    }
    out
}

/// Throughput of every backend on one chart, with its caption.
pub(crate) fn throughput_chart(run: &Run, w: u32, h: u32) -> Option<(Markup, Markup)> {
    let o = overlay(run)?;
    let medians: Vec<f64> = o
        .lines
        .iter()
        .filter_map(|(_, bs)| {
            let mut r: Vec<f64> = bs.iter().map(|b| b.rate).filter(|r| *r > 0.0).collect();
            r.sort_by(f64::total_cmp);
            r.get(r.len() / 2).copied()
        })
        .collect();
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi_med = medians.iter().copied().fold(0.0, f64::max);
    let log = lo.is_finite() && hi_med / lo > 20.0;
    let svg = chart::svg(w, h, |root| {
        draw(
            root,
            &o,
            |b| Some(b.rate),
            log,
            ("Throughput over time", "acquisitions/s"),
        )
    });
    let caption = format!(
        "{} ms buckets, {} scale; grey: warm-up{}.",
        o.width_ms,
        if log { "log" } else { "linear" },
        if o.shades.is_empty() {
            ", no faults in this run"
        } else {
            ", purple: fault windows"
        }
    );
    Some((svg, html! { (caption) }))
}

/// Acquire p99 per bucket of every backend on one log chart, with its caption.
pub(crate) fn p99_chart(run: &Run, w: u32, h: u32) -> Option<(Markup, Markup)> {
    let o = overlay(run)?;
    let svg = chart::svg(w, h, |root| {
        draw(
            root,
            &o,
            |b| b.lat.map(|l| l.1),
            true,
            ("Acquire latency p99 over time", "p99 (ms)"),
        )
    });
    let caption = format!(
        "p99 per {} ms bucket, log scale; a spike inside a purple band is that fault's cost.",
        o.width_ms
    );
    Some((svg, html! { (caption) }))
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    o: &Overlay,
    pick: impl Fn(&Bucket) -> Option<f64> + Copy,
    log: bool,
    (title, y_desc): (&str, &str),
) -> Drawn {
    let vals = || {
        o.lines
            .iter()
            .flat_map(|(_, bs)| bs.iter().filter_map(pick))
    };
    let hi = chart::nice_ceil(vals().fold(0.001, f64::max) * if log { 1.0 } else { 1.1 });
    let builder = |root| {
        let mut b = ChartBuilder::on(root);
        b.caption(title, chart::font(15))
            .margin(8)
            .margin_right(16)
            .x_label_area_size(34)
            .y_label_area_size(58);
        b
    };
    if log {
        let lo_raw = vals().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let lo = if lo_raw.is_finite() {
            10f64.powf(lo_raw.log10().floor()).max(0.001)
        } else {
            0.001
        };
        let hi = if hi <= lo * 1.01 { lo * 10.0 } else { hi };
        let mut ch = builder(root).build_cartesian_2d(
            0f64..o.x_hi,
            (lo..hi)
                .log_scale()
                .with_key_points(chart::log_ticks(lo, hi)),
        )?;
        chart::house_mesh(&mut ch.configure_mesh(), 12)
            .x_desc("seconds since the backend's first op")
            .y_desc(y_desc)
            .y_label_formatter(&|y| chart::ms_label(*y))
            .draw()?;
        lines(&mut ch, o, pick, lo, hi)
    } else {
        let mut ch = builder(root).build_cartesian_2d(0f64..o.x_hi, 0f64..hi)?;
        chart::house_mesh(&mut ch.configure_mesh(), 12)
            .x_desc("seconds since the backend's first op")
            .y_desc(y_desc)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        lines(&mut ch, o, pick, 0.0, hi)
    }
}

/// The warm-up, the fault windows and one line per backend (values below the axis drawn on it).
fn lines<Y: Ranged<ValueType = f64>>(
    ch: &mut ChartContext<'_, SVGBackend, Cartesian2d<RangedCoordf64, Y>>,
    o: &Overlay,
    pick: impl Fn(&Bucket) -> Option<f64>,
    lo: f64,
    hi: f64,
) -> Drawn {
    timeline::warmup_band(ch, o.warm, lo, hi)?;
    chart::draw_shades(ch, &o.shades, lo, hi)?;
    for (i, bs) in &o.lines {
        ch.draw_series(LineSeries::new(
            bs.iter().filter_map(|b| pick(b).map(|v| (b.x, v.max(lo)))),
            chart::color(*i).stroke_width(2),
        ))?;
    }
    Ok(())
}
