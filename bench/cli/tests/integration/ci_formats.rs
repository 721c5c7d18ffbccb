//! A run for CI systems: `summary.csv` (the summary table, numbers unformatted) and
//! `junit.xml` (one testcase per expectation), written into the run directory and printed by
//! `lockbench report --format csv|junit`, read back with a CSV and an XML parser.

use crate::common;
use crate::compare::{result, write};
use quick_xml::events::Event;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// A run of zk-fair and redlock with three expectations: met, failed (its text full of
/// characters XML must escape), unknown.
fn run_with_expectations(dir: &Path) -> (std::path::PathBuf, Value) {
    let run = write(
        dir,
        "run",
        vec![result("zk-fair", 10_000, 0), result("redlock", 20_000, 2)],
    );
    let path = run.join("results.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    r["expectations"] = json!([
        {"backend": "zk-fair", "expect": "safe", "implicit": true, "outcome": "met",
         "measured": "valid"},
        {"backend": "redlock", "expect": "safe", "outcome": "failed",
         "measured": "invalid: 2 overlaps <mutex> & \"more\""},
        {"backend": "redlock", "expect": "min_throughput", "outcome": "unknown",
         "measured": "did not run"},
    ]);
    std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();
    (run, r)
}

fn report(args: &[&str], run: &Path) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("report")
        .args(args)
        .arg(run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::text(&out));
    out
}

#[test]
fn the_summary_csv_has_a_row_per_backend_with_its_figures_unformatted() {
    let dir = common::scratch("ci-formats", "csv");
    let (run, r) = run_with_expectations(&dir);
    let out = report(&["--format", "csv"], &run);
    let mut csv = csv::Reader::from_reader(out.stdout.as_slice());
    let header = csv.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).expect(name);
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let backends: Vec<&str> = rows.iter().map(|row| &row[column("backend")]).collect();
    let expected: Vec<&str> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, expected);
    let redlock = &rows[1];
    assert_eq!(&redlock[column("acquire_p99_us")], "20000");
    assert_eq!(
        redlock[column("throughput_per_s")].parse::<f64>().unwrap(),
        1000.0
    );
    assert_eq!(&redlock[column("safety")], "valid");
    assert_eq!(&redlock[column("handoff_p50_us")], "", "no hand-off: empty");
    std::fs::remove_dir_all(&dir).ok();
}

/// One testcase of a JUnit document.
struct Case {
    classname: String,
    name: String,
    /// The verdict element (`failure`, `error`, `skipped`) and its message; none when it passed.
    verdict: Option<(String, String)>,
}

/// The testcases of a JUnit document, in order.
fn testcases(xml: &str) -> Vec<Case> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut cases = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |name: &str| {
                    e.try_get_attribute(name).unwrap().map(|a| {
                        let value = a.normalized_value(quick_xml::XmlVersion::Implicit1_0);
                        value.unwrap().into_owned()
                    })
                };
                let tag = e.name().as_ref().to_string();
                match tag.as_str() {
                    "testcase" => cases.push(Case {
                        classname: attr("classname").unwrap(),
                        name: attr("name").unwrap(),
                        verdict: None,
                    }),
                    "failure" | "error" | "skipped" => {
                        let case = cases.last_mut().expect("inside a testcase");
                        case.verdict = Some((tag, attr("message").unwrap_or_default()));
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    cases
}

#[test]
fn junit_has_a_testcase_per_expectation_and_a_failure_for_the_failed_one() {
    let dir = common::scratch("ci-formats", "junit");
    let (run, r) = run_with_expectations(&dir);
    let out = report(&["--format", "junit"], &run);
    let xml = String::from_utf8(out.stdout).unwrap();
    let cases = testcases(&xml);
    let expectations = r["expectations"].as_array().unwrap();
    assert_eq!(cases.len(), expectations.len(), "{xml}");
    for (case, e) in cases.iter().zip(expectations) {
        assert_eq!(case.classname, e["backend"].as_str().unwrap(), "{xml}");
        assert!(
            case.name.starts_with(e["expect"].as_str().unwrap()),
            "{xml}"
        );
        let verdict = case.verdict.as_ref().map(|(tag, _)| tag.as_str());
        let want = match e["outcome"].as_str().unwrap() {
            "met" => None,
            "failed" => Some("failure"),
            _ => Some("error"),
        };
        assert_eq!(verdict, want, "{xml}");
    }
    let failure = cases[1].verdict.as_ref().unwrap();
    assert_eq!(failure.1, expectations[1]["measured"].as_str().unwrap());
    assert!(
        xml.contains("failures=\"1\"") && xml.contains("errors=\"1\""),
        "{xml}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn report_writes_both_files_into_the_run_directory() {
    let dir = common::scratch("ci-formats", "files");
    let (run, _) = run_with_expectations(&dir);
    let csv = report(&["--format", "csv"], &run).stdout;
    let junit = report(&["--format", "junit"], &run).stdout;
    for file in ["summary.csv", "junit.xml", "report.html"] {
        let _ = std::fs::remove_file(run.join(file));
    }
    report(&[], &run);
    assert_eq!(std::fs::read(run.join("summary.csv")).unwrap(), csv);
    assert_eq!(std::fs::read(run.join("junit.xml")).unwrap(), junit);
    assert!(run.join("report.html").exists());
    std::fs::remove_dir_all(&dir).ok();
}
