//! The sizing table a sweep prints: per backend and grid point, the highest offered rate
//! sustained within the objective and what it cost the servers.

use comfy_table::{Cell, CellAlignment};
use lockbench_results::capacity::{Capacity, SizingRow, SizingVerdict};

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// `1234` for an `ok` knee, `>= 1234` when it is only a lower bound.
pub fn rate_label(r: &SizingRow) -> String {
    match (r.verdict, r.max_rate_per_s) {
        (SizingVerdict::Ok, Some(x)) => format!("{x:.0}"),
        (_, Some(x)) => format!(">= {x:.0}"),
        (SizingVerdict::None, None) => format!("< {}", opt(r.first_failed_rate_per_s, 0)),
        _ => "-".into(),
    }
}

fn point_label(r: &SizingRow) -> String {
    let dims: Vec<String> = r
        .point
        .iter()
        .map(|(p, v)| format!("{}={v}", p.rsplit('.').next().unwrap_or(p)))
        .collect();
    format!(
        "{}/{}{}",
        r.clients,
        r.keys,
        if dims.is_empty() {
            String::new()
        } else {
            format!(" ({})", dims.join(" "))
        }
    )
}

/// Renders the sizing table, then a line per row that has a note.
pub fn render(c: &Capacity) -> String {
    let mut t = crate::table::titled(&[
        "backend",
        "N/K",
        "max acq/s",
        "verdict",
        "p99 ms (uncorr.)",
        "server CPU %",
        "server RSS MiB",
        "req/acq",
        "lockbench CPU %",
        "machine CPU %",
    ]);
    for r in &c.sizing {
        t.add_row(vec![
            Cell::new(&r.backend),
            Cell::new(point_label(r)),
            Cell::new(rate_label(r)).set_alignment(CellAlignment::Right),
            Cell::new(r.verdict.name()),
            Cell::new(format!(
                "{} ({})",
                opt(r.knee.as_ref().and_then(|k| k.p99_ms), 1),
                opt(r.knee.as_ref().and_then(|k| k.p99_service_ms), 1)
            ))
            .set_alignment(CellAlignment::Right),
            Cell::new(opt(r.knee.as_ref().and_then(|k| k.server_cpu_percent), 0))
                .set_alignment(CellAlignment::Right),
            Cell::new(opt(r.knee.as_ref().and_then(|k| k.server_rss_mib), 0))
                .set_alignment(CellAlignment::Right),
            Cell::new(opt(
                r.knee.as_ref().and_then(|k| k.requests_per_acquisition),
                2,
            ))
            .set_alignment(CellAlignment::Right),
            Cell::new(opt(
                r.knee.as_ref().and_then(|k| k.generator_cpu_percent),
                0,
            ))
            .set_alignment(CellAlignment::Right),
            Cell::new(opt(r.knee.as_ref().and_then(|k| k.machine_cpu_percent), 0))
                .set_alignment(CellAlignment::Right),
        ]);
    }
    let mut out = format!(
        "Capacity at p99 <= {} ms (achieved within {:.0}% of offered); CPU: 100% = one core, machine: % of all cores, other work included:\n{t}\n",
        c.slo_p99_ms,
        c.tolerance * 100.0
    );
    for r in c.sizing.iter().filter(|r| !r.note.is_empty()) {
        out.push_str(&format!("  {} {}: {}\n", r.backend, point_label(r), r.note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_bounds_are_marked() {
        let mut r = SizingRow {
            backend: "redis-setnx".into(),
            clients: 16,
            keys: 1,
            verdict: SizingVerdict::Ok,
            max_rate_per_s: Some(1234.4),
            ..SizingRow::default()
        };
        assert_eq!(rate_label(&r), "1234");
        r.verdict = SizingVerdict::GeneratorBound;
        assert_eq!(rate_label(&r), ">= 1234");
        let c = Capacity {
            slo_p99_ms: 50.0,
            tolerance: 0.05,
            sizing: vec![r],
            ..Capacity::default()
        };
        let text = render(&c);
        assert!(text.contains(">= 1234") && text.contains("16/1"), "{text}");
    }
}
