//! The verdict suite's renderings: `verdict.json`, the page, the Markdown summary and the
//! terminal's table, all from one [`Decision`].

use anyhow::Context;
use lockbench_results::capacity::SizingVerdict;
use lockbench_results::decision::{Decision, FaultColumn, Herd, Knee, Perf, Row, SHAPES};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The suite's results file, in its directory.
pub const FILE: &str = "verdict.json";
/// The Markdown summary, in its directory.
pub const SUMMARY: &str = "summary.md";

/// Writes `verdict.json`, `summary.md` and `report.html` into `dir`; gives the page's path.
pub fn write(dir: &Path, decision: &Decision) -> anyhow::Result<PathBuf> {
    let json = serde_json::to_string_pretty(decision)?;
    crate::run_dir::write_atomic(&dir.join(FILE), json.as_bytes())?;
    crate::run_dir::write_atomic(&dir.join(SUMMARY), markdown(decision).as_bytes())?;
    let page = dir.join("report.html");
    crate::run_dir::write_atomic(&page, crate::html::decision_page(decision).as_bytes())?;
    Ok(page)
}

/// Reads `dir/verdict.json`.
pub fn read(dir: &Path) -> anyhow::Result<Decision> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a suite's verdict", path.display()))
}

/// The table's header: backend, one column per shape, the knee, one per fault, the herd.
pub fn header(decision: &Decision) -> Vec<String> {
    let mut h = vec!["backend".to_string()];
    h.extend(SHAPES.iter().map(|s| format!("{s} acq/s (p99)")));
    h.push(format!("knee p99<={:.0}ms", decision.slo_p99_ms));
    h.extend(FaultColumn::ALL.iter().map(|c| c.title().to_string()));
    h.push("herd wake-ups".into());
    h
}

/// One row's cells as text, in [`header`]'s order.
pub fn cells(row: &Row) -> Vec<String> {
    let mut out = vec![if row.broken {
        format!("{} (broken on purpose)", row.backend)
    } else {
        row.backend.clone()
    }];
    out.extend(row.shapes.iter().map(|e| perf(&e.cell)));
    out.push(knee(&row.knee.cell));
    out.extend(FaultColumn::ALL.iter().map(|&c| {
        row.fault(c)
            .map_or_else(|| "n/a".to_string(), |e| e.cell.word().to_string())
    }));
    out.push(herd(&row.herd.cell));
    out
}

/// `1234 (9.8 ms)`, `1234+ (9.8 ms)` when lockbench was the limit, or `-`.
pub fn perf(p: &Perf) -> String {
    match p {
        Perf::Measured {
            throughput_per_s,
            p99_us,
            generator_bound,
            ..
        } => {
            // `+`: at least this much; lockbench was the limit.
            let bound = if *generator_bound { "+" } else { "" };
            match p99_us {
                Some(us) => format!(
                    "{throughput_per_s:.0}{bound} ({} ms)",
                    crate::html::ms_text(*us)
                ),
                None => format!("{throughput_per_s:.0}{bound}"),
            }
        }
        Perf::Missing { .. } => "-".into(),
    }
}

/// The knee's rate, marked when lockbench may have been the limit or the top was not reached.
pub fn knee(k: &Knee) -> String {
    match k {
        Knee::Found {
            rate_per_s: Some(rate),
            verdict,
            ..
        } => match verdict {
            SizingVerdict::Ok => format!("{rate:.0}"),
            other => format!("{rate:.0} ({})", other.name()),
        },
        Knee::Found { verdict, .. } => verdict.name().to_string(),
        Knee::Missing { .. } => "-".into(),
    }
}

/// Wake-ups per release, or `-`.
pub fn herd(h: &Herd) -> String {
    match h {
        Herd::Counted {
            wakeups_per_release: Some(w),
            ..
        } => format!("{w:.2}"),
        Herd::Counted { .. } => "not counted".into(),
        Herd::Missing { .. } => "-".into(),
    }
}

/// The picks, one entry per backend in the order first picked: each need with its figure
/// (`the most throughput on a hot key, faults aside (3375 acq/s at 8/1)`).
pub fn picks_by_backend(decision: &Decision) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for p in &decision.picks {
        let need = format!("{} ({})", p.reason.need(), p.figure);
        match out.iter_mut().find(|(b, _)| *b == p.backend) {
            Some((_, needs)) => needs.push(need),
            None => out.push((p.backend.clone(), vec![need])),
        }
    }
    out
}

/// The first line: every part's expectations met, or which were not.
pub fn headline(decision: &Decision) -> String {
    let [mut met, mut failed, mut unknown] = [0u64; 3];
    for p in &decision.parts {
        met += p.expectations[0];
        failed += p.expectations[1];
        unknown += p.expectations[2];
    }
    let state = if !decision.complete {
        "INCOMPLETE"
    } else if failed > 0 {
        "EXPECTATIONS FAILED"
    } else if unknown > 0 {
        "EXPECTATIONS UNKNOWN"
    } else {
        "EXPECTATIONS MET"
    };
    format!(
        "{state}: {met} met, {failed} failed, {unknown} unknown over {} parts; {} backends",
        decision.parts.len(),
        decision.rows.len()
    )
}

/// The terminal's table and the picks.
pub fn terminal(decision: &Decision) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_header(header(decision));
    for row in &decision.rows {
        t.add_row(cells(row));
    }
    let mut out = format!("{t}\n");
    for (backend, needs) in picks_by_backend(decision) {
        let _ = writeln!(out, "pick {backend} if you need {}", needs.join("; or "));
    }
    out.push_str(&headline(decision));
    out
}

/// The Markdown summary: the headline, the table, the picks, what produced it.
pub fn markdown(decision: &Decision) -> String {
    let mut out = format!("### lockbench verdict: {}\n\n", headline(decision));
    let h = header(decision);
    let _ = writeln!(out, "| {} |", h.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(h.len()));
    for row in &decision.rows {
        let mut c = cells(row);
        if row.broken {
            c[0] = format!("**{}**", c[0]);
        }
        let _ = writeln!(out, "| {} |", c.join(" | ").replace('\n', " "));
    }
    out.push('\n');
    for (backend, needs) in picks_by_backend(decision) {
        let _ = writeln!(
            out,
            "- Pick **{backend}** if you need {}.",
            needs.join("; or ")
        );
    }
    let e = &decision.environment;
    let _ = writeln!(
        out,
        "\nlockbench {}, seed {}, cluster {}, {} CPUs ({}), kernel {}; {:.1} min of a {:.0} min budget.",
        e.lockbench_version,
        decision.seed,
        decision.cluster,
        e.cpus,
        e.cpu_model,
        e.kernel,
        decision.wall_s / 60.0,
        decision.budget_s / 60.0
    );
    out
}
