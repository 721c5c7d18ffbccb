//! Text from a results directory reaches the page as text: a backend name, a checker's finding
//! and a fault's note that hold markup (and a quote that would end an attribute) are escaped
//! wherever they appear, in the report and in the index.
//!
//! The backend's name has no quote: the history reader takes a name as it stands in the line
//! (no JSON escapes), so a quoted name would lose its charts, not test them.

use super::{OTHERS, history, section, synthetic_run};
use lockbench_core::history::file::{FILE_NAME, append_frame};
use lockbench_report::html::{write_index, write_report};
use serde_json::{Value, json};

/// Markup that would run if a page inserted it as it is; its quote would end an attribute.
const EVIL: &str = "\"><script>alert(1)</script>";
/// The same text, escaped.
const ESCAPED: &str = "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;";
/// A backend's name that would run as well.
const NAME: &str = "<script>alert(1)</script>";
/// The name, escaped.
const NAME_ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";

/// The synthetic run with the broken backend renamed to [`NAME`] (in `results.json` and the
/// history alike), and [`EVIL`] as the scenario, a checker's finding, a server's version, a
/// knob, an expectation's measure, the reason a figure is unknown and a fault's note.
fn evil_run(parent: &std::path::Path) -> std::path::PathBuf {
    let dir = synthetic_run(parent, "run", "2026-01-01T00:00:00Z", true);
    let file = dir.join("results.json");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "\"redis-broken-nonx\"",
        &serde_json::to_string(NAME).unwrap(),
    );
    let mut r: Value = serde_json::from_str(&text).unwrap();
    r["scenario"] = json!(EVIL);
    r["environment"]["servers"]["redis"] = json!(EVIL);
    r["expectations"][1]["measured"] = json!(EVIL);
    let good = &mut r["results"][0];
    good["safety"]["verdict"] = json!("unknown");
    good["safety"]["failed_checkers"] = json!([EVIL]);
    good["requests"]["server_unknown"] = json!(EVIL);
    good["requests"]["server_per_acquisition"] = json!(null);
    let bad = &mut r["results"][1];
    bad["recipe"]["knobs"] = json!([["ttl", EVIL]]);
    bad["future_field"] = json!({"note": EVIL});
    std::fs::write(&file, r.to_string()).unwrap();

    let mut lines = history("zk-fair", false);
    lines.extend(history(NAME, true));
    for b in OTHERS {
        lines.extend(history(b, false));
    }
    lines.push(
        json!({"backend": NAME, "type": "nemesis", "t": 1_000_000_000u64, "fault": "kill",
               "phase": "start", "targets": ["server1"], "note": EVIL, "applied": true})
        .to_string(),
    );
    lines.sort_by_key(|l| serde_json::from_str::<Value>(l).unwrap()["t"].as_u64());
    std::fs::remove_file(dir.join(FILE_NAME)).unwrap();
    append_frame(&dir.join(FILE_NAME), (lines.join("\n") + "\n").as_bytes()).unwrap();
    dir
}

#[test]
fn markup_in_names_findings_and_notes_is_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = evil_run(tmp.path());
    let html = std::fs::read_to_string(write_report(&dir).unwrap()).unwrap();
    assert!(!html.contains("<script"), "raw markup in the page");
    assert!(!html.contains(EVIL) && !html.contains(NAME));
    assert!(html.contains(&format!("<title>lockbench: {ESCAPED} (")));
    assert!(html.contains(&format!("<h1>lockbench report: {ESCAPED}</h1>")));
    // The backend's name in the headline, the legend, the tables and the per-backend charts.
    assert!(html.contains(&format!("<b>UNEXPECTED</b> {NAME_ESCAPED}: 1 overlap")));
    for id in [
        "glance",
        "summary",
        "scorecard",
        "recipes",
        "timeline",
        "holders",
        "fencing",
    ] {
        assert!(
            section(&html, id).contains(NAME_ESCAPED),
            "#{id}: {NAME} not escaped"
        );
    }
    // A finding, a measure, a version, a knob and a fault's note.
    let summary = section(&html, "summary");
    assert!(
        summary.contains(&format!("unknown: {ESCAPED}")),
        "{summary}"
    );
    assert!(section(&html, "expectations").contains(&format!("<td>{ESCAPED}</td>")));
    assert!(section(&html, "environment").contains(&format!("<td>{ESCAPED}</td>")));
    assert!(section(&html, "recipes").contains(&format!("<code>ttl = {ESCAPED}</code>")));
    assert!(section(&html, "more").contains(ESCAPED));
    assert!(section(&html, "timeline").contains(&format!("<td>{ESCAPED}</td>")));
    // In an attribute the quote does not end it.
    assert!(summary.contains(&format!("<span title=\"{ESCAPED}\">?</span>")));

    let index = std::fs::read_to_string(write_index(tmp.path()).unwrap()).unwrap();
    assert!(!index.contains("<script"), "raw markup in the index");
    assert!(index.contains(&format!("<td>{ESCAPED}</td>")), "{index}");
    assert!(index.contains(&format!("<b class=\"bad\">{NAME_ESCAPED}</b>")));
}
