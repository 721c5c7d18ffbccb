//! What every chart shares: one colour per backend (red is kept for violations), the SVG
//! string backend, fault-window shading, and the fonts.

use super::page;
use super::trace::FaultWindow;
use maud::{Markup, PreEscaped, html};
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Violations, overlaps and accepted stale writes.
pub(crate) const BAD: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// Rejected stale writes: fencing doing its job.
pub(crate) const FENCED: RGBColor = RGBColor(0xe3, 0x8b, 0x00);
/// Axis and label text.
pub(crate) const INK: RGBColor = RGBColor(0x33, 0x3a, 0x41);
/// Fault-window shading.
const FAULT: RGBColor = RGBColor(0x8e, 0x6c, 0xc4);

/// Backend colours (Tableau 10 without its red).
const PALETTE: [RGBColor; 9] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The colour of the `i`-th backend of the run, the same in every chart.
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A font for chart text.
pub(crate) fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&INK)
}

/// The result of a drawing closure.
pub(crate) type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Draws a `w` x `h` chart into an inline `<svg>`: plotters' output, inserted as it is. A
/// drawing error becomes a note in place of the chart rather than failing the whole report.
pub(crate) fn svg(
    w: u32,
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Drawn,
) -> Markup {
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error>)
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(|e| e.into()))
    };
    match result {
        // Inline SVG in HTML needs no namespace declaration; leaving it out keeps the page
        // free of any URL.
        Ok(()) => PreEscaped(compact(&out.replacen(
            " xmlns=\"http://www.w3.org/2000/svg\"",
            "",
            1,
        ))),
        Err(e) => page::note(format!("chart could not be drawn: {e}")),
    }
}

/// Drops what plotters writes on every element but SVG already defaults to (`opacity="1"`) or
/// the page's stylesheet sets once (`svg text { font-family: sans-serif }`): about a fifth of a
/// chart's bytes, which keeps a report with many charts small enough to mail.
fn compact(svg: &str) -> String {
    svg.replace(" opacity=\"1\"", "")
        .replace(" font-family=\"sans-serif\"", "")
}

/// A fault window in the chart's x unit.
#[derive(Clone, Debug)]
pub(crate) struct Shade {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
    pub applied: bool,
}

/// The fault windows of `faults` in the chart's unit (`scale` ns per unit, `origin` ns at
/// x = 0), clipped to `[lo, hi]`; an unfinished window runs to `hi`.
pub(crate) fn shades<'a>(
    faults: impl Iterator<Item = &'a FaultWindow>,
    origin: u64,
    scale: f64,
    lo: f64,
    hi: f64,
) -> Vec<Shade> {
    faults
        .filter_map(|f| {
            let x = |t: u64| (t as f64 - origin as f64) / scale;
            let x0 = x(f.start).max(lo);
            let x1 = f.end.map(x).unwrap_or(hi).min(hi);
            (x1 >= x0 && x0 <= hi).then(|| Shade {
                x0,
                x1,
                label: if f.applied {
                    f.label.clone()
                } else {
                    format!("{} (not applied)", f.label)
                },
                applied: f.applied,
            })
        })
        .collect()
}

/// Shades fault windows over the whole height `[y_lo, y_hi]` and labels each at the top (unless
/// its label is empty).
/// Zero-length windows (instant events) are drawn as a line.
pub(crate) fn draw_shades<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    shades: &[Shade],
    y_lo: f64,
    y_hi: f64,
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let span = chart.x_range();
    let min_width = (span.end - span.start) / 400.0;
    for s in shades {
        let alpha = if s.applied { 0.22 } else { 0.08 };
        let x1 = s.x1.max(s.x0 + min_width);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(s.x0, y_lo), (x1, y_hi)],
                FAULT.mix(alpha).filled(),
            )))
            .map_err(|e| e.to_string())?;
        if s.label.is_empty() {
            continue;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                s.label.clone(),
                (s.x0, y_hi),
                font(11).color(&FAULT.mix(1.0)),
            )))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `v`.
pub(crate) fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// Tick values for a log axis over `[lo, hi]`: the decades, plus 2x and 5x when the axis spans
/// few decades, so labels never crowd.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10();
    let mults: &[f64] = if decades <= 2.5 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut p = 10f64.powf(lo.log10().floor());
    while p <= hi * 1.0001 {
        for m in mults {
            let v = p * m;
            if v >= lo * 0.9999 && v <= hi * 1.0001 {
                out.push(v);
            }
        }
        p *= 10.0;
    }
    out
}

/// A latency label in ms: no trailing zeros.
pub(crate) fn ms_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A linear-axis label: as many decimals as the axis span needs.
pub(crate) fn num_label(v: f64, span: f64) -> String {
    let digits = if span >= 20.0 {
        0
    } else if span >= 2.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}")
}

/// `#rrggbb` of a colour, for HTML next to the charts.
pub(crate) fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A backend's name after a square of its chart colour.
pub(crate) fn swatch(i: usize, name: &str) -> Markup {
    html! { span.key { i style={ "background:" (hex(color(i))) } {} (name) } }
}

/// The legend every comparison chart shares, as HTML outside the plots: one swatch per backend
/// of the run, in the run's order (the colour index is the backend's position).
pub(crate) fn legend<'a>(backends: impl Iterator<Item = &'a str>) -> Markup {
    let keys = backends.enumerate().map(|(i, b)| swatch(i, b));
    html! { p.legend { (page::join(keys, " ")) } }
}

/// The house style of every chart's mesh: tick labels at `label` px, axis titles one px
/// larger, no light grid lines and faint bold ones. Axis titles and formatters stay per chart.
pub(crate) fn house_mesh<'m, 'a, 'b, X, Y, XT, YT, DB>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
    label: u32,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged<ValueType = XT> + plotters::coord::ranged1d::ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + plotters::coord::ranged1d::ValueFormatter<YT>,
    DB: DrawingBackend,
{
    mesh.label_style(font(label))
        .axis_desc_style(font(label + 1))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
}
