//! The safety scorecard: backend x fault, each cell saying how often the fault was applied,
//! which violations followed and whether the backend stayed available. Read from the raw
//! `results.json` (`scorecard.cells`) so a cell shape from a newer lockbench still renders.

use super::load::Run;
use super::page::{self, esc};
use serde_json::Value;

/// The section, or nothing when the run has no scorecard.
pub(crate) fn section(run: &Run) -> String {
    let Some(cells) = run
        .raw
        .pointer("/scorecard/cells")
        .and_then(Value::as_array)
    else {
        return String::new();
    };
    if cells.is_empty() {
        return String::new();
    }
    let s = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut backends: Vec<String> = Vec::new();
    let mut faults: Vec<String> = Vec::new();
    for c in cells {
        let (b, f) = (s(c, "backend"), s(c, "fault"));
        if !backends.contains(&b) {
            backends.push(b);
        }
        if !faults.contains(&f) {
            faults.push(f);
        }
    }
    let mut t = String::from("<div class=\"scroll\"><table>\n<tr><th>backend</th>");
    for f in &faults {
        t.push_str(&format!("<th>{}</th>", esc(f)));
    }
    t.push_str("</tr>\n");
    for b in &backends {
        t.push_str(&format!("<tr><td>{}</td>", esc(b)));
        for f in &faults {
            let cell = cells
                .iter()
                .find(|c| s(c, "backend") == *b && s(c, "fault") == *f);
            t.push_str(&cell.map(render_cell).unwrap_or_else(|| "<td>-</td>".into()));
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table></div>\n");
    page::section(
        "scorecard",
        "Safety scorecard",
        "For each backend and fault: how many fault windows were applied, the violations found in that backend's run (damage included: stale writes and writes after the lock was lost that the resource accepted), the same writes fencing stopped (not damage: the token doing its job), and whether every window was followed by a successful acquisition. Red: a violation; amber: did not stay available; grey: the fault could not be applied here.",
        &t,
    )
}

fn render_cell(c: &Value) -> String {
    let n = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (runs, not_applied) = (n("runs"), n("not_applied"));
    let tally = |field: &str| -> Vec<String> {
        c.get(field)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.as_u64().unwrap_or(1) > 0)
                    .map(|(k, v)| format!("{} {}", esc(&v.to_string()), esc(&k.replace('_', " "))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (violations, fenced) = (tally("violations"), tally("fenced"));
    let available = c.get("stayed_available").and_then(Value::as_bool);
    let (class, verdict) = if !violations.is_empty() {
        ("bad", format!("UNSAFE: {}", violations.join(", ")))
    } else if runs == 0 && not_applied > 0 {
        ("error", "not applied here".into())
    } else {
        ("ok", "safe".into())
    };
    let avail = match available {
        Some(true) => "stayed available",
        Some(false) => "<b>became unavailable</b>",
        None => "",
    };
    let class = if class == "ok" && available == Some(false) {
        "unknown"
    } else {
        class
    };
    let mut extra = format!("{runs} run(s)");
    if not_applied > 0 {
        extra.push_str(&format!(", {not_applied} not applied"));
    }
    if !fenced.is_empty() {
        extra.push_str(&format!("; fencing stopped {}", fenced.join(", ")));
    }
    format!("<td class=\"{class}\">{verdict}<br><small>{extra}; {avail}</small></td>")
}
