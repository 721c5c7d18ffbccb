//! `results/index.html`: every run directory under the results root, newest first, with its
//! scenario, start time, backends, expectation outcome and safety verdict, linking its report
//! (or its `results.json` when it has no report yet). Each `results.json` is read as plain
//! JSON, so runs written by older or newer lockbench versions still get a line.

use super::page;
use super::summary::overall_verdict;
use anyhow::Context;
use lockbench_results::Validity;
use lockbench_results::expect::Outcome;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

struct Entry {
    dir: String,
    started: String,
    scenario: String,
    backends: Vec<(String, Validity)>,
    /// The worst outcome of the run's expectations (`None`: it judged none, or an older
    /// version wrote it).
    expectations: Option<Outcome>,
    complete: bool,
    has_report: bool,
}

/// (Re)writes `results_root/index.html` linking every run directory directly under
/// `results_root`, returning its path.
pub fn write_index(results_root: &Path) -> anyhow::Result<PathBuf> {
    write_index_with(results_root, &[])
}

/// A page the index links below the runs: its title and its path relative to the index.
pub struct Extra {
    /// What the link says.
    pub title: String,
    /// Where it goes, relative to the index.
    pub href: String,
}

/// [`write_index`], with `extras` linked below the runs (a site's comparisons).
pub fn write_index_with(results_root: &Path, extras: &[Extra]) -> anyhow::Result<PathBuf> {
    let mut entries = Vec::new();
    let dirs = std::fs::read_dir(results_root)
        .with_context(|| format!("cannot list {}", results_root.display()))?;
    for d in dirs.flatten() {
        let path = d.path();
        let Ok(text) = std::fs::read_to_string(path.join("results.json")) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let backends = v
            .get("results")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|r| {
                        let backend = r.pointer("/backend").and_then(Value::as_str);
                        // A verdict this version does not know reads as unknown.
                        let verdict = r
                            .pointer("/safety/verdict")
                            .and_then(|v| Validity::deserialize(v).ok())
                            .unwrap_or(Validity::Unknown);
                        (backend.unwrap_or("unknown").to_string(), verdict)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // An outcome this version does not know reads as unknown.
        let expectations = v
            .get("expectations")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|e| {
                        e.get("outcome")
                            .and_then(|o| Outcome::deserialize(o).ok())
                            .unwrap_or(Outcome::Unknown)
                    })
                    .max()
            });
        entries.push(Entry {
            dir: d.file_name().to_string_lossy().to_string(),
            started: s("started_at"),
            scenario: s("scenario"),
            backends,
            expectations,
            complete: v.get("complete").and_then(Value::as_bool).unwrap_or(false),
            has_report: path.join("report.html").exists(),
        });
    }
    entries.sort_by(|a, b| (&b.started, &b.dir).cmp(&(&a.started, &a.dir)));

    let body = html! {
        h1 { "lockbench runs" }
        p.meta { (entries.len()) " run(s) in this directory, newest first." }
        table.wide {
            tr {
                th { "run" }
                th { "scenario" }
                th { "started (UTC)" }
                th { "backends" }
                th { "expectations" }
                th { "safety" }
            }
            @for e in &entries {
                (row(e))
            }
        }
        @if !extras.is_empty() {
            h2 { "Each scenario's newest run against the one before" }
            ul {
                @for x in extras {
                    li { a href=(x.href) { (x.title) } }
                }
            }
        }
    };
    let path = results_root.join("index.html");
    std::fs::write(&path, page::document("lockbench runs", body))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// One run's line.
fn row(e: &Entry) -> Markup {
    let target = if e.has_report {
        "report.html"
    } else {
        "results.json"
    };
    let verdicts: Vec<Validity> = e.backends.iter().map(|(_, v)| *v).collect();
    let overall = overall_verdict(&verdicts).name();
    let backends = e.backends.iter().map(|(b, v)| match v {
        Validity::Valid => html! { (b) },
        Validity::Invalid => html! { b.bad { (b) } },
        Validity::Unknown => html! { b.unknown { (b) } },
    });
    html! {
        tr {
            td { a href={ (e.dir) "/" (target) } { (e.dir) } }
            td { (e.scenario) }
            td { (e.started) }
            td { (page::join(backends, ", ")) }
            td {
                // The run against its expectations first, as the report's headline.
                @match (e.complete, e.expectations) {
                    (false, _) => span.verdict.incomplete { "incomplete" },
                    (true, None) => "-",
                    // The outcome's word is also the headline's CSS class (`met`, `failed`,
                    // `unknown`).
                    (true, Some(o)) => span.verdict.(o.name()) { (o.name()) },
                }
            }
            td {
                span.verdict.(overall) { (overall) }
                @if !e.complete {
                    " " small { "incomplete" }
                }
            }
        }
    }
}
