//! `junit.xml`: a run's expectations as JUnit XML, the test-report format CI systems read
//! (GitLab, Jenkins, GitHub's test reporters): one `<testsuite>` per run, one `<testcase>` per
//! expectation (classname the backend, name the `[expect]` key), a `<failure>` for a failed one
//! and an `<error>` for one that could not be judged, since `lockbench run` fails on both
//! (exit 1 and 2); a run cut short gets one more testcase in error, `complete`, as nothing
//! was judged. Written with quick-xml, which escapes every attribute and text.

use lockbench_results::expect::{self, Outcome};
use lockbench_results::model::{ExpectationResult, RunResults};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};
use std::io;

/// The whole document.
pub fn render(results: &RunResults) -> anyhow::Result<String> {
    let count = |o: Outcome| {
        results
            .expectations
            .iter()
            .filter(|e| e.outcome == o)
            .count()
    };
    let cut_short = usize::from(!results.complete);
    let tests = (results.expectations.len() + cut_short).to_string();
    let failures = count(Outcome::Failed).to_string();
    let errors = (count(Outcome::Unknown) + cut_short).to_string();
    let suite = format!("lockbench.{}", results.scenario);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attributes([
            ("name", "lockbench"),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", errors.as_str()),
        ])
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attributes([
                    ("name", suite.as_str()),
                    ("tests", tests.as_str()),
                    ("failures", failures.as_str()),
                    ("errors", errors.as_str()),
                    ("skipped", "0"),
                    ("timestamp", results.started_at.as_str()),
                ])
                .write_inner_content(|w| {
                    properties(w, results)?;
                    for e in &results.expectations {
                        testcase(w, e)?;
                    }
                    if !results.complete {
                        cut_short_case(w)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    let mut xml = String::from_utf8(w.into_inner())?;
    xml.push('\n');
    Ok(xml)
}

/// The run's facts a reader of the report needs to reproduce it.
fn properties(w: &mut Writer<Vec<u8>>, r: &RunResults) -> io::Result<()> {
    let seed = r.seed.to_string();
    let props = [
        ("scenario", r.scenario.as_str()),
        ("seed", seed.as_str()),
        ("cluster", r.cluster.as_str()),
        (
            "lockbench_version",
            r.environment.lockbench_version.as_str(),
        ),
    ];
    w.create_element("properties").write_inner_content(|w| {
        for (name, value) in props {
            w.create_element("property")
                .with_attributes([("name", name), ("value", value)])
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

fn testcase(w: &mut Writer<Vec<u8>>, e: &ExpectationResult) -> io::Result<()> {
    let name = if e.implicit {
        format!("{} (implicit)", e.expect)
    } else {
        e.expect.clone()
    };
    let case = w
        .create_element("testcase")
        .with_attributes([("classname", e.backend.as_str()), ("name", name.as_str())]);
    let verdict = match e.outcome {
        Outcome::Met => None,
        Outcome::Failed => Some("failure"),
        Outcome::Unknown => Some("error"),
    };
    match verdict {
        None => {
            case.write_empty()?;
        }
        Some(tag) => {
            case.write_inner_content(|w| {
                w.create_element(tag)
                    .with_attributes([("message", e.measured.as_str()), ("type", e.outcome.name())])
                    .write_text_content(BytesText::new(&expect::line(e)))?;
                Ok(())
            })?;
        }
    }
    Ok(())
}

fn cut_short_case(w: &mut Writer<Vec<u8>>) -> io::Result<()> {
    let why = "the run was cut short before its last backend: nothing was judged";
    w.create_element("testcase")
        .with_attributes([("classname", "lockbench"), ("name", "complete")])
        .write_inner_content(|w| {
            w.create_element("error")
                .with_attributes([("message", why), ("type", "incomplete")])
                .write_empty()?;
            Ok(())
        })?;
    Ok(())
}
