//! A sweep's capacity section: the sizing table, and per backend the throughput-latency
//! curves of every grid point (achieved rate and p99 against the offered rate) with the knee
//! marked, the objective drawn, and the uncorrected p99 beside the corrected one, so the
//! page shows how much a closed-loop tool would have hidden.

use super::chart::{self, Drawn};
use super::load::Run;
use super::page::{self, esc};
use crate::sizing::rate_label;
use lockbench_results::capacity::{Capacity, SizingRow, SizingVerdict, SweepPoint};
use plotters::coord::Shift;
use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;

/// The section, or nothing for a run that is not a sweep.
pub(crate) fn section(run: &Run) -> String {
    let Some(cap) = run
        .raw
        .get("capacity")
        .and_then(|v| serde_json::from_value::<Capacity>(v.clone()).ok())
    else {
        return String::new();
    };
    let mut body = table(&cap);
    let mut backends: Vec<&str> = Vec::new();
    for p in &cap.points {
        if !backends.contains(&p.backend.as_str()) {
            backends.push(&p.backend);
        }
    }
    for b in backends {
        let points: Vec<(usize, &SweepPoint, Option<&SizingRow>)> = cap
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.backend == b)
            .map(|(i, p)| (i, p, cap.sizing.get(i)))
            .collect();
        let achieved = chart::svg(560, 300, |root| draw_rate(root, b, &points));
        let latency = chart::svg(560, 300, |root| draw_p99(root, b, &points, cap.slo_p99_ms));
        body.push_str(&format!(
            "<h3 id=\"capacity-{0}\">{0}</h3>\n<div class=\"pair\">\n",
            esc(b)
        ));
        body.push_str(&page::figure(
            &achieved,
            "Achieved against offered rate (dotted: achieved = offered). A point below the line fell behind its schedule. Ringed: the knee.",
        ));
        body.push_str(&page::figure(
            &latency,
            "p99 acquire latency against offered rate: solid from the intended start (corrected), dashed from the call (uncorrected). Horizontal line: the objective. Ringed: the knee.",
        ));
        body.push_str("</div>\n");
        body.push_str(&step_index(points.iter().map(|(_, p, _)| *p)));
    }
    page::section(
        "capacity",
        "Capacity",
        &format!(
            "The highest offered rate each backend sustained with p99 acquire latency (from the intended start) at most {} ms and the achieved rate within {:.0}% of the offered one. <i>generator-bound</i>: lockbench itself was the limit next to the knee, so the figure is only a lower bound; <i>not-reached</i>: every rate tried was sustained. Server CPU (100% = one core) and memory are the backend's servers at the knee step; machine CPU is of all cores, other work on the machine included.",
            cap.slo_p99_ms,
            cap.tolerance * 100.0
        ),
        &body,
    )
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn table(cap: &Capacity) -> String {
    let mut s = String::from(
        "<div class=\"scroll\"><table><tr><th>backend</th><th>clients/keys</th><th>grid point</th><th>max acq/s</th><th>verdict</th><th>p99 ms</th><th>uncorrected p99 ms</th><th>server CPU %</th><th>server RSS MiB</th><th>req/acq</th><th>lockbench CPU %</th><th>machine CPU %</th><th>note</th></tr>\n",
    );
    for r in &cap.sizing {
        let point: Vec<String> = r.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let class = if r.verdict == SizingVerdict::Ok {
            "ok"
        } else {
            "unknown"
        };
        s.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{}/{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><small>{}</small></td></tr>\n",
            esc(&r.backend),
            r.clients,
            r.keys,
            esc(&point.join(" ")),
            esc(&rate_label(r)),
            r.verdict.name(),
            opt(r.knee.as_ref().and_then(|k| k.p99_ms), 1),
            opt(r.knee.as_ref().and_then(|k| k.p99_service_ms), 1),
            opt(r.knee.as_ref().and_then(|k| k.server_cpu_percent), 0),
            opt(r.knee.as_ref().and_then(|k| k.server_rss_mib), 0),
            opt(r.knee.as_ref().and_then(|k| k.requests_per_acquisition), 2),
            opt(r.knee.as_ref().and_then(|k| k.generator_cpu_percent), 0),
            opt(r.knee.as_ref().and_then(|k| k.machine_cpu_percent), 0),
            esc(&r.note),
        ));
    }
    s.push_str("</table></div>\n");
    s
}

/// Every step of a backend's grid points, each linking its run directory: the sweep's index.
fn step_index<'a>(points: impl Iterator<Item = &'a SweepPoint>) -> String {
    let mut rows = String::new();
    let mut n = 0;
    for p in points {
        for s in &p.steps {
            n += 1;
            let verdict = match (s.offered_per_s, s.sustained) {
                (None, _) => "probe".to_string(),
                (_, true) => "sustained".into(),
                (_, false) => format!("not sustained: {}", s.reasons.join("; ")),
            };
            rows.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><small>{}</small></td><td><a href=\"{}/results.json\">{}</a></td></tr>\n",
                esc(&label(p)),
                esc(&s.phase),
                opt(s.offered_per_s, 0),
                s.achieved_per_s,
                opt(s.p50_ms, 1),
                opt(s.p99_ms, 1),
                opt(s.p99_service_ms, 1),
                s.errors,
                opt(s.generator_cpu_percent, 0),
                opt(s.server_cpu_percent, 0),
                esc(&format!("{verdict}{}", if s.generator_bound { " (GENERATOR-BOUND)" } else { "" })),
                esc(&s.run_dir),
                esc(s.run_dir.rsplit('/').next().unwrap_or(&s.run_dir)),
            ));
        }
    }
    format!(
        "<details><summary>every step ({n})</summary><div class=\"scroll\"><table><tr><th>grid point</th><th>phase</th><th>offered/s</th><th>achieved/s</th><th>p50 ms</th><th>p99 ms</th><th>uncorrected p99 ms</th><th>errors</th><th>lockbench CPU %</th><th>server CPU %</th><th>verdict</th><th>run</th></tr>\n{rows}</table></div></details>\n"
    )
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
