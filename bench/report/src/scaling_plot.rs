//! `lockbench scaling --plot FILE`: each backend's measured throughput against its
//! concurrency as points, and the scalability model fitted to them as a line over the same
//! axes (continued past the points when a prediction was asked for, dashed there), in one
//! standalone SVG. The concurrency axis is logarithmic: measured points double, and a
//! prediction may be far beyond them.

use plotters::prelude::*;

/// One backend on the plot.
pub struct Series {
    /// The backend's name (the legend).
    pub backend: String,
    /// Measured `(concurrency, acquisitions per second)`.
    pub measured: Vec<(f64, f64)>,
    /// The model's prediction at a concurrency, when it has one.
    pub model: Option<Box<dyn Fn(f64) -> f64>>,
}

/// The SVG document: `axis` names the concurrency (`clients`, `workers`); the x axis runs
/// from 1 to the largest of `up_to` and the measured concurrencies.
pub fn svg(axis: &str, series: &[Series], up_to: f64) -> Result<String, String> {
    let measured_max = series
        .iter()
        .flat_map(|s| s.measured.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let x_max = up_to.max(measured_max).max(2.0) * 1.1;
    let curve = |s: &Series| -> Vec<(f64, f64)> {
        let Some(model) = &s.model else {
            return Vec::new();
        };
        (0..=200)
            .map(|i| {
                let n = x_max.powf(f64::from(i) / 200.0);
                (n, model(n))
            })
            .collect()
    };
    let y_max = series
        .iter()
        .flat_map(|s| {
            s.measured
                .iter()
                .map(|p| p.1)
                .chain(curve(s).into_iter().map(|p| p.1))
        })
        .fold(1.0, f64::max)
        * 1.1;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 520)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    "throughput against concurrency: measured (points) and the fitted model (line)",
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d((1.0..x_max).log_scale(), 0.0..y_max)?;
            chart
                .configure_mesh()
                .x_desc(axis)
                .y_desc("acquisitions/s")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw()?;
            for (i, s) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                let top = s.measured.iter().map(|p| p.0).fold(1.0, f64::max);
                let line = curve(s);
                chart
                    .draw_series(LineSeries::new(
                        line.iter().copied().filter(|p| p.0 <= top),
                        color.stroke_width(2),
                    ))?
                    .label(&s.backend)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart.draw_series(DashedLineSeries::new(
                    line.into_iter().filter(|p| p.0 >= top),
                    6,
                    4,
                    color.stroke_width(1),
                ))?;
                chart.draw_series(
                    s.measured
                        .iter()
                        .map(|&p| Circle::new(p, 4, color.filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| format!("the plot could not be drawn: {e}"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_and_the_model_are_drawn_on_one_plot() {
        let law = |n: f64| 900.0 * n / (1.0 + 0.04 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let s = Series {
            backend: "redis-setnx".into(),
            measured: [1.0, 2.0, 4.0, 8.0].iter().map(|&n| (n, law(n))).collect(),
            model: Some(Box::new(law)),
        };
        let svg = svg("clients", &[s], 500.0).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        assert_eq!(
            svg.matches("<circle").count(),
            4,
            "the four measured points"
        );
        assert!(svg.contains("redis-setnx") && svg.contains("clients"));
        assert!(svg.contains("<polyline"), "the model's line");
    }
}
