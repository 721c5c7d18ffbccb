//! Fields of `results.json` that have no dedicated view here (a scorecard, notification
//! fan-out, failover timelines, whatever later versions add), rendered generically as tables,
//! so new results show up in reports before anyone draws them. Absent fields render nothing.

use super::load::Run;
use super::page::{self, esc};
use serde_json::Value;
use std::collections::BTreeSet;

/// Top-level fields the header and the tables already show.
const KNOWN_TOP: &[&str] = &[
    "schema_version",
    "scenario",
    "seed",
    "started_at",
    "complete",
    "cluster",
    "environment",
    "results",
    "scorecard",
    "capacity",
    "expectations",
];

/// Per-result fields the summary, recipe table and charts already show.
const KNOWN_RESULT: &[&str] = &[
    "backend",
    "workload",
    "status",
    "error",
    "clients",
    "keys",
    "offered_rate_per_s",
    "measured_s",
    "acquisitions",
    "acquisitions_total",
    "throughput_per_s",
    "acquire_latency_us",
    "acquire_service_time_us",
    "handoff_latency_us",
    "fairness_jain",
    "per_client_acquisitions",
    "longest_wait_us",
    "clients_replaced",
    "errors",
    "safety",
    "server_ops_per_acquisition",
    "requests",
    "recipe",
    "failover",
    "resources",
    "fanout",
];

const MAX_ROWS: usize = 200;
const MAX_DEPTH: usize = 4;

/// The section, or nothing when `results.json` has no other fields.
pub(crate) fn section(run: &Run) -> String {
    let mut body = String::new();
    if let Some(top) = run.raw.as_object() {
        for (k, v) in top {
            if !KNOWN_TOP.contains(&k.as_str()) && !v.is_null() {
                body.push_str(&format!("<h3>{}</h3>\n{}\n", esc(&title(k)), value(v, 0)));
            }
        }
    }
    let results: Vec<&Value> = run
        .raw
        .get("results")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let extra_keys: BTreeSet<&str> = results
        .iter()
        .filter_map(|r| r.as_object())
        .flat_map(|o| o.iter())
        .filter(|(k, v)| !KNOWN_RESULT.contains(&k.as_str()) && !v.is_null())
        .map(|(k, _)| k.as_str())
        .collect();
    for key in extra_keys {
        body.push_str(&format!(
            "<h3>{}</h3>\n<div class=\"scroll\"><table><tr><th>backend</th><th>{}</th></tr>\n",
            esc(&title(key)),
            esc(key)
        ));
        for r in &results {
            let Some(v) = r.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            let backend = r.get("backend").and_then(Value::as_str).unwrap_or("?");
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td></tr>\n",
                esc(backend),
                value(v, 1)
            ));
        }
        body.push_str("</table></div>\n");
    }
    if body.is_empty() {
        return String::new();
    }
    page::section(
        "more",
        "More results",
        "Further results recorded in <code>results.json</code>, shown as they are.",
        &body,
    )
}

fn title(key: &str) -> String {
    let t = key.replace('_', " ");
    let mut c = t.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => t,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => esc(s),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => {
                let s = format!("{f:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
            _ => n.to_string(),
        },
        other => esc(&other.to_string()),
    }
}

/// Renders any JSON value as HTML: objects as key/value tables, arrays of objects as tables
/// with a column per key, other arrays as lists.
pub(crate) fn value(v: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return format!("<code>{}</code>", esc(&v.to_string()));
    }
    match v {
        Value::Object(o) => {
            let mut s = String::from("<table>");
            for (k, v) in o {
                s.push_str(&format!(
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(k),
                    value(v, depth + 1)
                ));
            }
            s.push_str("</table>");
            s
        }
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_object) => {
            let mut cols: Vec<&str> = Vec::new();
            for o in a.iter().filter_map(Value::as_object) {
                for k in o.keys() {
                    if !cols.contains(&k.as_str()) {
                        cols.push(k);
                    }
                }
            }
            let mut s = String::from("<table><tr>");
            for c in &cols {
                s.push_str(&format!("<th>{}</th>", esc(c)));
            }
            s.push_str("</tr>");
            for o in a.iter().take(MAX_ROWS) {
                s.push_str("<tr>");
                for c in &cols {
                    s.push_str(&format!(
                        "<td>{}</td>",
                        o.get(*c).map(|v| value(v, depth + 1)).unwrap_or_default()
                    ));
                }
                s.push_str("</tr>");
            }
            s.push_str("</table>");
            if a.len() > MAX_ROWS {
                s.push_str(&page::note(&format!(
                    "first {MAX_ROWS} of {} rows",
                    a.len()
                )));
            }
            s
        }
        Value::Array(a) => {
            let items: Vec<String> = a
                .iter()
                .take(MAX_ROWS)
                .map(|v| value(v, depth + 1))
                .collect();
            let more = if a.len() > MAX_ROWS {
                format!(", … ({} in all)", a.len())
            } else {
                String::new()
            };
            format!("{}{more}", items.join(", "))
        }
        other => scalar(other),
    }
}
