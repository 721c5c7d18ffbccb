//! The latency percentile spectrum (the HdrHistogram plot): x is the percentile on a
//! `1/(1-p)` log scale, so 90%, 99%, 99.9% get equal room and the tail is visible; y is the
//! latency in ms, also log scaled so a 0.1 ms and a 100 ms backend fit one chart. Drawn from
//! the `.hdr` files, which hold every sample, not from the summary percentiles. All backends
//! share one chart per metric (the page's first screen, `glance`), with the legend outside the
//! plot so it never covers the tail.

use super::chart::{self, Drawn};
use super::load::Run;
use hdrhistogram::Histogram;
use maud::Markup;
use plotters::prelude::*;

/// The spectrum of `metric` (`acquire` | `handoff`) of every backend with samples, on one log
/// scale, as an inline SVG `w` x `h`; `None` when no backend has a histogram for it. The legend
/// is the page's (`chart::legend`), outside the plot.
pub(crate) fn chart(run: &Run, metric: &str, title: &str, w: u32, h: u32) -> Option<Markup> {
    let series: Vec<(usize, &str, &Histogram<u64>)> = run
        .results
        .results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            run.histogram(&r.backend, metric)
                .map(|h| (i, r.backend.as_str(), h))
        })
        .collect();
    (!series.is_empty()).then(|| chart::svg(w, h, |root| draw(root, title, &series)))
}

/// One backend's line: colour index, name, points.
type Line<'a> = (usize, &'a str, Vec<(f64, f64)>);

/// The points of one histogram: (1/(1-p), ms), ending at the maximum.
fn points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let n = h.len().max(1) as f64;
    let mut pts: Vec<(f64, f64)> = h
        .iter_quantiles(5)
        .map(|v| (v.quantile_iterated_to(), v.value_iterated_to()))
        .filter(|(q, _)| *q < 1.0 - 1.0 / n)
        .map(|(q, v)| (1.0 / (1.0 - q), v as f64 / 1e3))
        .collect();
    pts.push((n.max(2.0), h.max() as f64 / 1e3));
    pts
}

fn percent_label(x: f64) -> String {
    if x <= 1.0001 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 1.0 / x);
    let digits = (x.log10().round() as i32 - 2).max(0) as usize;
    format!("{p:.digits$}%")
}

fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    series: &[(usize, &str, &Histogram<u64>)],
) -> Drawn {
    let lines: Vec<Line> = series
        .iter()
        .map(|(i, name, h)| (*i, *name, points(h)))
        .collect();
    let x_max = chart::nice_ceil(
        lines
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(x, _)| *x))
            .fold(10.0, f64::max),
    );
    let x_max = 10f64.powf(x_max.log10().ceil());
    let y_hi = chart::nice_ceil(
        lines
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
            .fold(0.001, f64::max),
    );
    let y_min = lines
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let y_lo = if y_min.is_finite() {
        10f64.powf(y_min.log10().floor()).max(0.001)
    } else {
        0.001
    };
    let y_hi = if y_hi <= y_lo * 1.01 {
        y_lo * 10.0
    } else {
        y_hi
    };
    let mut keys = vec![2.0];
    let mut k = 10.0;
    while k <= x_max {
        keys.push(k);
        k *= 10.0;
    }
    let mut chart = ChartBuilder::on(root)
        .caption(title, chart::font(15))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(58)
        .build_cartesian_2d(
            (1f64..x_max).log_scale().with_key_points(keys),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(chart::log_ticks(y_lo, y_hi)),
        )?;
    chart::house_mesh(&mut chart.configure_mesh(), 12)
        .x_desc("percentile")
        .y_desc("latency (ms)")
        .x_label_formatter(&|x| percent_label(*x))
        .y_label_formatter(&|y| chart::ms_label(*y))
        .draw()?;
    for (i, _, pts) in &lines {
        let c = chart::color(*i);
        chart.draw_series(LineSeries::new(
            pts.iter().map(|(x, y)| (*x, y.max(y_lo))),
            c.stroke_width(2),
        ))?;
        if let Some(&(x, y)) = pts.last() {
            chart.draw_series(std::iter::once(Circle::new(
                (x, y.max(y_lo)),
                3,
                c.filled(),
            )))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_labels_read_as_percentiles() {
        assert_eq!(percent_label(1.0), "0%");
        assert_eq!(percent_label(2.0), "50%");
        assert_eq!(percent_label(10.0), "90%");
        assert_eq!(percent_label(100.0), "99%");
        assert_eq!(percent_label(1000.0), "99.9%");
        assert_eq!(percent_label(10000.0), "99.99%");
    }
}
