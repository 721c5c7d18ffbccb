//! The comparison as a terminal table, Markdown (a CI comment), JSON, or a self-contained
//! HTML page (inline CSS, no scripts, no network).

use crate::compare::{Comparison, Row, Verdict};
use crate::config::Metric;
use comfy_table::{Cell, Color, Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write;

fn fmt_value(metric: Metric, v: Option<f64>) -> String {
    let Some(v) = v else { return "-".into() };
    match metric {
        Metric::Throughput => format!("{v:.1}/s"),
        Metric::Safety => format!("{v:.0}"),
        Metric::Status => "-".into(),
        _ if v >= 1000.0 => format!("{:.2} ms", v / 1000.0),
        _ => format!("{v:.0} µs"),
    }
}

fn fmt_change(r: &Row) -> String {
    match r.change {
        Some(c) if c.is_infinite() => "new".into(),
        Some(c) => format!("{:+.1}%", c * 100.0),
        None => "-".into(),
    }
}

fn fmt_q(r: &Row) -> String {
    r.q_value
        .map(|q| format!("{q:.3}"))
        .unwrap_or_else(|| "-".into())
}

fn fmt_threshold(r: &Row) -> String {
    match r.metric {
        Metric::Safety | Metric::Status => "any".into(),
        _ => format!("±{:.0}%", r.threshold * 100.0),
    }
}

fn fmt_n(r: &Row) -> String {
    format!("{}/{}", r.base_n, r.new_n)
}

const HEADER: [&str; 10] = [
    "backend", "workload", "metric", "base", "new", "change", "noise", "n", "q", "verdict",
];

fn cells(r: &Row) -> [String; 10] {
    let verdict = if r.note.is_empty() {
        r.verdict.label().to_string()
    } else {
        format!("{} ({})", r.verdict.label(), r.note)
    };
    [
        r.backend.clone(),
        r.workload.clone(),
        r.metric.name().into(),
        fmt_value(r.metric, r.base),
        fmt_value(r.metric, r.new),
        fmt_change(r),
        fmt_threshold(r),
        fmt_n(r),
        fmt_q(r),
        verdict,
    ]
}

/// One-line summary: `2 regressed, 1 improved, 30 unchanged; 1 backend missing`.
pub fn summary(c: &Comparison) -> String {
    let unchanged = c.rows.len() - c.regressions() - c.improvements();
    let mut s = format!(
        "{} regressed, {} improved, {} no change",
        c.regressions(),
        c.improvements(),
        unchanged
    );
    if !c.missing.is_empty() {
        let _ = write!(s, "; {} result(s) on one side only", c.missing.len());
    }
    if !c.injected.is_empty() {
        let ms =
            |v: Option<f64>| v.map_or("none".to_string(), lockbench_results::model::slowdown_label);
        let each: Vec<String> = c
            .injected
            .iter()
            .map(|i| {
                format!(
                    "{}/{} {} -> {}",
                    i.backend,
                    i.workload,
                    ms(i.base_ms),
                    ms(i.new_ms)
                )
            })
            .collect();
        let _ = write!(
            s,
            "; INJECTED SLOWDOWN (workload.slowdown, per acquire): {}",
            each.join(", ")
        );
    }
    s
}

fn missing_lines(c: &Comparison) -> Vec<String> {
    c.missing
        .iter()
        .map(|m| {
            format!(
                "{} / {}: only in the {} run",
                m.backend,
                m.workload,
                if m.only_in == "base" {
                    "baseline"
                } else {
                    "new"
                }
            )
        })
        .collect()
}

/// The terminal table, followed by the missing results and the summary.
pub fn table(c: &Comparison) -> String {
    table_in_color(c, false)
}

/// [`table`], with the verdicts in colour when `color` (regressed red, improved green).
pub fn table_in_color(c: &Comparison, color: bool) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(HEADER);
    if color {
        t.enforce_styling();
    }
    for r in &c.rows {
        let paint = match r.verdict {
            Verdict::Regressed => Some(Color::Red),
            Verdict::Improved => Some(Color::Green),
            Verdict::NonSignificant => None,
        };
        let last = HEADER.len() - 1;
        t.add_row(cells(r).into_iter().enumerate().map(|(i, text)| {
            match paint.filter(|_| color && i == last) {
                Some(paint) => Cell::new(text).fg(paint),
                None => Cell::new(text),
            }
        }));
    }
    let mut out = format!("base: {}\nnew:  {}\n{t}\n", c.base_label, c.new_label);
    for line in missing_lines(c) {
        let _ = writeln!(out, "MISSING: {line}");
    }
    let _ = writeln!(out, "{}", summary(c));
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// GitHub-flavoured Markdown: regressions first, then a collapsed table of everything.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let icon = if c.regressions() > 0 { "❌" } else { "✅" };
    let _ = writeln!(out, "### lockbench compare {icon} {}\n", summary(c));
    let _ = writeln!(
        out,
        "base: `{}` · new: `{}`\n",
        md_escape(&c.base_label),
        md_escape(&c.new_label)
    );
    let header = format!(
        "| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    let row_line = |r: &Row| {
        let mut cs = cells(r).map(|s| md_escape(&s));
        if r.verdict == Verdict::Regressed {
            cs[9] = format!("**{}**", cs[9]);
        }
        format!("| {} |\n", cs.join(" | "))
    };
    let changed: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| r.verdict != Verdict::NonSignificant)
        .collect();
    if !changed.is_empty() {
        out.push_str(&header);
        for r in changed {
            out.push_str(&row_line(r));
        }
        out.push('\n');
    }
    for line in missing_lines(c) {
        let _ = writeln!(out, "- ⚠️ missing: {}", md_escape(&line));
    }
    let _ = writeln!(
        out,
        "\n<details><summary>All {} comparisons</summary>\n",
        c.rows.len()
    );
    out.push_str(&header);
    for r in &c.rows {
        out.push_str(&row_line(r));
    }
    out.push_str("\n</details>\n");
    out
}

/// The comparison as JSON (rows, missing results, configuration).
pub fn json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a comparison serialises")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A self-contained HTML page.
pub fn html(c: &Comparison) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>lockbench compare</title><style>\
         body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
         table{border-collapse:collapse;font-size:14px}\
         th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}\
         td:nth-child(-n+3),th{text-align:left}\
         tr.regressed td{background:#fdd}tr.improved td{background:#dfd}\
         .missing{color:#a60}</style></head><body>\n",
    );
    let _ = writeln!(out, "<h1>lockbench compare</h1>");
    let _ = writeln!(
        out,
        "<p>base: <code>{}</code><br>new: <code>{}</code></p>",
        html_escape(&c.base_label),
        html_escape(&c.new_label)
    );
    let _ = writeln!(
        out,
        "<p id=\"summary\"><strong>{}</strong></p>",
        html_escape(&summary(c))
    );
    for line in missing_lines(c) {
        let _ = writeln!(
            out,
            "<p class=\"missing\">missing: {}</p>",
            html_escape(&line)
        );
    }
    out.push_str("<table><thead><tr>");
    for h in HEADER {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in &c.rows {
        let class = match r.verdict {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::NonSignificant => "same",
        };
        let _ = write!(out, "<tr class=\"{class}\">");
        for cell in cells(r) {
            let _ = write!(out, "<td>{}</td>", html_escape(&cell));
        }
        out.push_str("</tr>\n");
    }
    let _ = writeln!(
        out,
        "</tbody></table>\n<p>Noise thresholds are relative changes; with repetitions on both \
         sides a change must also pass Welch's t-test with q &lt; {} (q: the p-value adjusted by \
         Benjamini–Hochberg over the {} tests of this comparison); latency changes under {} µs \
         are noise. New safety violations are always regressions.</p></body></html>",
        c.config.significance, c.tests, c.config.latency_floor_us
    );
    out
}
