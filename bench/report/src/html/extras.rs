//! Fields of `results.json` that have no dedicated view here (a scorecard, notification
//! fan-out, failover timelines, whatever later versions add), rendered generically as tables,
//! so new results show up in reports before anyone draws them. Absent fields render nothing.

use super::load::Run;
use super::page;
use maud::{Markup, html};
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
pub(crate) fn section(run: &Run) -> Markup {
    let top: Vec<(&String, &Value)> = run
        .raw
        .as_object()
        .map(|top| {
            top.iter()
                .filter(|(k, v)| !KNOWN_TOP.contains(&k.as_str()) && !v.is_null())
                .collect()
        })
        .unwrap_or_default();
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
    if top.is_empty() && extra_keys.is_empty() {
        return html! {};
    }
    let body = html! {
        @for (k, v) in top {
            h3 { (title(k)) }
            (value(v, 0))
        }
        @for key in extra_keys {
            h3 { (title(key)) }
            (page::scroll_table(&["backend", key], html! {
                @for r in &results {
                    @if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
                        tr {
                            td { (r.get("backend").and_then(Value::as_str).unwrap_or("?")) }
                            td { (value(v, 1)) }
                        }
                    }
                }
            }))
        }
    };
    page::section(
        "more",
        "More results",
        html! { "Further results recorded in " code { "results.json" } ", shown as they are." },
        body,
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

/// A JSON value that is not a container, as text.
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => {
                let s = format!("{f:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Renders any JSON value as HTML: objects as key/value tables, arrays of objects as tables
/// with a column per key, other arrays as lists.
pub(crate) fn value(v: &Value, depth: usize) -> Markup {
    if depth > MAX_DEPTH {
        return html! { code { (v.to_string()) } };
    }
    match v {
        Value::Object(o) => html! {
            table {
                @for (k, v) in o {
                    tr { th { (k) } td { (value(v, depth + 1)) } }
                }
            }
        },
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_object) => {
            let mut cols: Vec<&str> = Vec::new();
            for o in a.iter().filter_map(Value::as_object) {
                for k in o.keys() {
                    if !cols.contains(&k.as_str()) {
                        cols.push(k);
                    }
                }
            }
            html! {
                table {
                    tr {
                        @for c in &cols {
                            th { (c) }
                        }
                    }
                    @for o in a.iter().take(MAX_ROWS) {
                        tr {
                            @for c in &cols {
                                td {
                                    @if let Some(v) = o.get(*c) {
                                        (value(v, depth + 1))
                                    }
                                }
                            }
                        }
                    }
                }
                @if a.len() > MAX_ROWS {
                    (page::note(format!("first {MAX_ROWS} of {} rows", a.len())))
                }
            }
        }
        Value::Array(a) => html! {
            (page::join(a.iter().take(MAX_ROWS).map(|v| value(v, depth + 1)), ", "))
            @if a.len() > MAX_ROWS {
                ", … (" (a.len()) " in all)"
            }
        },
        other => html! { (scalar(other)) },
    }
}
