//! A sweep's capacity section: the sizing table, and per backend the throughput-latency
//! curves of every grid point (achieved rate and p99 against the offered rate) with the knee
//! marked, the objective drawn, and the uncorrected p99 beside the corrected one, so the
//! page shows how much a closed-loop tool would have hidden.

use super::chart::{self, Drawn};
use super::load::Run;
use super::page;
use crate::sizing::rate_label;
use lockbench_results::capacity::{Capacity, SizingRow, SizingVerdict, SweepPoint, SweepStep};
use maud::{Markup, html};
use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;

/// The section, or nothing for a run that is not a sweep.
pub(crate) fn section(run: &Run) -> Markup {
    let Some(cap) = run
        .raw
        .get("capacity")
        .and_then(|v| serde_json::from_value::<Capacity>(v.clone()).ok())
    else {
        return html! {};
    };
    let mut backends: Vec<&str> = Vec::new();
    for p in &cap.points {
        if !backends.contains(&p.backend.as_str()) {
            backends.push(&p.backend);
        }
    }
    let body = html! {
        (table(&cap))
        @for b in backends {
            @let points: Vec<(usize, &SweepPoint, Option<&SizingRow>)> = cap
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.backend == b)
                .map(|(i, p)| (i, p, cap.sizing.get(i)))
                .collect();
            h3 id={ "capacity-" (b) } { (b) }
            div.pair {
                (page::figure(
                    chart::svg(560, 300, |root| draw_rate(root, b, &points)),
                    "Achieved against offered rate (dotted: achieved = offered). A point below the line fell behind its schedule. Ringed: the knee.",
                ))
                (page::figure(
                    chart::svg(560, 300, |root| draw_p99(root, b, &points, cap.slo_p99_ms)),
                    "p99 acquire latency against offered rate: solid from the intended start (corrected), dashed from the call (uncorrected). Horizontal line: the objective. Ringed: the knee.",
                ))
            }
            (step_index(points.iter().map(|(_, p, _)| *p)))
        }
    };
    let intro = html! {
        "The highest offered rate each backend sustained with p99 acquire latency (from the intended start) at most "
        (cap.slo_p99_ms) " ms and the achieved rate within " (format!("{:.0}", cap.tolerance * 100.0))
        "% of the offered one. " i { "generator-bound" }
        ": lockbench itself was the limit next to the knee, so the figure is only a lower bound; "
        i { "not-reached" }
        ": every rate tried was sustained. Server CPU (100% = one core) and memory are the backend's servers at the knee step; machine CPU is of all cores, other work on the machine included."
    };
    page::section("capacity", "Capacity", intro, body)
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn table(cap: &Capacity) -> Markup {
    let knee = |r: &SizingRow, f: fn(&SweepStep) -> Option<f64>, digits| {
        opt(r.knee.as_ref().and_then(f), digits)
    };
    page::scroll_table(
        &[
            "backend",
            "clients/keys",
            "grid point",
            "max acq/s",
            "verdict",
            "p99 ms",
            "uncorrected p99 ms",
            "server CPU %",
            "server RSS MiB",
            "req/acq",
            "lockbench CPU %",
            "machine CPU %",
            "note",
        ],
        html! {
            @for r in &cap.sizing {
                @let point: Vec<String> = r.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
                @let class = if r.verdict == SizingVerdict::Ok { "ok" } else { "unknown" };
                tr {
                    td { (r.backend) }
                    td.num { (r.clients) "/" (r.keys) }
                    td { (point.join(" ")) }
                    td.num { (rate_label(r)) }
                    td.(class) { (r.verdict.name()) }
                    td.num { (knee(r, |k| k.p99_ms, 1)) }
                    td.num { (knee(r, |k| k.p99_service_ms, 1)) }
                    td.num { (knee(r, |k| k.server_cpu_percent, 0)) }
                    td.num { (knee(r, |k| k.server_rss_mib, 0)) }
                    td.num { (knee(r, |k| k.requests_per_acquisition, 2)) }
                    td.num { (knee(r, |k| k.generator_cpu_percent, 0)) }
                    td.num { (knee(r, |k| k.machine_cpu_percent, 0)) }
                    td { small { (r.note) } }
                }
            }
        },
    )
}

/// Every step of a backend's grid points, each linking its run directory: the sweep's index.
fn step_index<'a>(points: impl Iterator<Item = &'a SweepPoint>) -> Markup {
    let steps: Vec<(&SweepPoint, &SweepStep)> = points
        .flat_map(|p| p.steps.iter().map(move |s| (p, s)))
        .collect();
    let rows = html! {
        @for (p, s) in &steps {
            @let verdict = match (s.offered_per_s, s.sustained) {
                (None, _) => "probe".to_string(),
                (_, true) => "sustained".into(),
                (_, false) => format!("not sustained: {}", s.reasons.join("; ")),
            };
            tr {
                td { (label(p)) }
                td { (s.phase) }
                td.num { (opt(s.offered_per_s, 0)) }
                td.num { (format!("{:.0}", s.achieved_per_s)) }
                td.num { (opt(s.p50_ms, 1)) }
                td.num { (opt(s.p99_ms, 1)) }
                td.num { (opt(s.p99_service_ms, 1)) }
                td.num { (s.errors) }
                td.num { (opt(s.generator_cpu_percent, 0)) }
                td.num { (opt(s.server_cpu_percent, 0)) }
                td {
                    small {
                        (verdict)
                        @if s.generator_bound { " (GENERATOR-BOUND)" }
                    }
                }
                td {
                    a href={ (s.run_dir) "/results.json" } {
                        (s.run_dir.rsplit('/').next().unwrap_or(&s.run_dir))
                    }
                }
            }
        }
    };
    html! {
        details {
            summary { "every step (" (steps.len()) ")" }
            (page::scroll_table(&["grid point", "phase", "offered/s", "achieved/s", "p50 ms", "p99 ms", "uncorrected p99 ms", "errors", "lockbench CPU %", "server CPU %", "verdict", "run"], rows))
        }
    }
}

/// Open-loop steps of a point, by offered rate (of a rate run twice, the last run).
fn curve(p: &SweepPoint) -> Vec<(f64, f64, Option<f64>, Option<f64>)> {
    let mut v: Vec<_> = p
        .steps
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !p.steps[i + 1..]
                .iter()
                .any(|later| later.offered_per_s == s.offered_per_s)
        })
        .filter_map(|(_, s)| {
            s.offered_per_s
                .map(|o| (o, s.achieved_per_s, s.p99_ms, s.p99_service_ms))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn label(p: &SweepPoint) -> String {
    if p.point.is_empty() {
        return "as scenario".into();
    }
    p.point
        .iter()
        .map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn x_range(points: &[(usize, &SweepPoint, Option<&SizingRow>)]) -> (f64, f64) {
    let xs: Vec<f64> = points
        .iter()
        .flat_map(|(_, p, _)| curve(p).into_iter().map(|c| c.0))
        .collect();
    let lo = xs.iter().copied().fold(f64::MAX, f64::min).max(0.1);
    let hi = xs.iter().copied().fold(0.0, f64::max).max(lo * 2.0);
    (lo / 1.3, hi * 1.3)
}

/// The log-log chart both curves are drawn on.
type LogLog<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

/// Axes over offered rate `x` and `y`, with the house style.
fn axes<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: String,
    x: (f64, f64),
    y: (f64, f64),
    y_desc: &str,
    y_label: &dyn Fn(&f64) -> String,
) -> Result<LogLog<'a, 'b>, Box<dyn std::error::Error>> {
    let mut ch = ChartBuilder::on(root)
        .caption(caption, chart::font(14))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(60)
        .build_cartesian_2d((x.0..x.1).log_scale(), (y.0..y.1).log_scale())?;
    chart::house_mesh(&mut ch.configure_mesh(), 11)
        .x_desc("offered acquisitions/s")
        .y_desc(y_desc)
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(y_label)
        .draw()?;
    Ok(ch)
}

/// One grid point's line, its dots, its legend entry and its ringed knee.
fn series(
    ch: &mut LogLog<'_, '_>,
    xy: &[(f64, f64)],
    color: RGBColor,
    name: String,
    knee: Option<f64>,
) -> Drawn {
    ch.draw_series(LineSeries::new(xy.iter().copied(), color.stroke_width(2)))?
        .label(name)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
    ch.draw_series(xy.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    if let Some(&p) = knee.and_then(|k| xy.iter().find(|p| p.0 == k)) {
        ch.draw_series(std::iter::once(Circle::new(p, 8, color.stroke_width(2))))?;
    }
    Ok(())
}

fn legend<'a, 'b: 'a>(ch: &mut LogLog<'a, 'b>) -> Drawn {
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(chart::font(11))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.2))
        .draw()?;
    Ok(())
}

fn draw_rate(
    root: &DrawingArea<SVGBackend, Shift>,
    name: &str,
    points: &[(usize, &SweepPoint, Option<&SizingRow>)],
) -> Drawn {
    let (lo, hi) = x_range(points);
    let mut ch = axes(
        root,
        format!("{name}: achieved rate"),
        (lo, hi),
        (lo, hi),
        "achieved acquisitions/s",
        &|v| format!("{v:.0}"),
    )?;
    ch.draw_series(LineSeries::new(
        [(lo, lo), (hi, hi)],
        ShapeStyle::from(&chart::INK.mix(0.4)).stroke_width(1),
    ))?;
    for (k, (_, p, row)) in points.iter().enumerate() {
        let xy: Vec<(f64, f64)> = curve(p).iter().map(|s| (s.0, s.1.max(lo))).collect();
        series(
            &mut ch,
            &xy,
            chart::color(k),
            label(p),
            row.and_then(|r| r.max_rate_per_s),
        )?;
    }
    legend(&mut ch)
}

fn draw_p99(
    root: &DrawingArea<SVGBackend, Shift>,
    name: &str,
    points: &[(usize, &SweepPoint, Option<&SizingRow>)],
    slo_ms: f64,
) -> Drawn {
    let (lo, hi) = x_range(points);
    let ys: Vec<f64> = points
        .iter()
        .flat_map(|(_, p, _)| curve(p).into_iter().flat_map(|c| [c.2, c.3]))
        .flatten()
        .collect();
    let y_lo = ys.iter().copied().fold(slo_ms, f64::min).max(0.01) / 1.5;
    let y_hi = ys.iter().copied().fold(slo_ms, f64::max) * 1.5;
    let mut ch = axes(
        root,
        format!("{name}: p99 acquire latency"),
        (lo, hi),
        (y_lo, y_hi),
        "p99 ms",
        &|v| chart::ms_label(*v),
    )?;
    ch.draw_series(LineSeries::new(
        [(lo, slo_ms), (hi, slo_ms)],
        chart::BAD.stroke_width(1),
    ))?;
    for (k, (_, p, row)) in points.iter().enumerate() {
        let color = chart::color(k);
        let c = curve(p);
        let corrected: Vec<(f64, f64)> = c
            .iter()
            .filter_map(|s| s.2.map(|y| (s.0, y.max(y_lo))))
            .collect();
        let service: Vec<(f64, f64)> = c
            .iter()
            .filter_map(|s| s.3.map(|y| (s.0, y.max(y_lo))))
            .collect();
        series(
            &mut ch,
            &corrected,
            color,
            label(p),
            row.and_then(|r| r.max_rate_per_s),
        )?;
        // Dashed: every other sixth of the segment between consecutive points.
        for w in service.windows(2) {
            let (a, b) = (w[0], w[1]);
            for i in 0..6 {
                if i % 2 == 1 {
                    continue;
                }
                let f = |t: f64| (a.0 * (b.0 / a.0).powf(t), a.1 * (b.1 / a.1).powf(t));
                ch.draw_series(LineSeries::new(
                    [f(i as f64 / 6.0), f((i + 1) as f64 / 6.0)],
                    color.mix(0.7).stroke_width(1),
                ))?;
            }
        }
    }
    legend(&mut ch)
}
