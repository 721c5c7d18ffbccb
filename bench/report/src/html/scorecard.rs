//! The safety scorecard: backend x fault, each cell saying how often the fault was applied,
//! which violations followed and whether the backend stayed available. Read from the raw
//! `results.json` (`scorecard.cells`) so a cell shape from a newer lockbench still renders.

use super::load::Run;
use super::page;
use maud::{Markup, html};
use serde_json::Value;

/// The section, or nothing when the run has no scorecard.
pub(crate) fn section(run: &Run) -> Markup {
    let Some(cells) = run
        .raw
        .pointer("/scorecard/cells")
        .and_then(Value::as_array)
    else {
        return html! {};
    };
    if cells.is_empty() {
        return html! {};
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
    let table = html! {
        div.scroll {
            table {
                tr {
                    th { "backend" }
                    @for f in &faults {
                        th { (f) }
                    }
                }
                @for b in &backends {
                    tr {
                        td { (b) }
                        @for f in &faults {
                            @match cells.iter().find(|c| s(c, "backend") == *b && s(c, "fault") == *f) {
                                Some(c) => (render_cell(c)),
                                None => td { "-" },
                            }
                        }
                    }
                }
            }
        }
    };
    page::section(
        "scorecard",
        "Safety scorecard",
        "For each backend and fault: how many fault windows were applied, the violations found in that backend's run (damage included: stale writes and writes after the lock was lost that the resource accepted), the same writes fencing stopped (not damage: the token doing its job), and whether every window was followed by a successful acquisition. Red: a violation; amber: did not stay available; grey: the fault could not be applied here.",
        table,
    )
}

fn render_cell(c: &Value) -> Markup {
    let n = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (runs, not_applied) = (n("runs"), n("not_applied"));
    let tally = |field: &str| -> Vec<String> {
        c.get(field)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.as_u64().unwrap_or(1) > 0)
                    .map(|(k, v)| format!("{v} {}", k.replace('_', " ")))
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
    html! {
        td.(class) {
            (verdict) br;
            small {
                (extra) "; "
                @match available {
                    Some(true) => "stayed available",
                    Some(false) => b { "became unavailable" },
                    None => {},
                }
            }
        }
    }
}
