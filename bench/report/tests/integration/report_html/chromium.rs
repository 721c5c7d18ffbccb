//! Opens a rendered report in headless Chromium (Debian's `chromium`), checks that the DOM it
//! builds has the charts and tables, checks what a reader sees on the first screen (1280 x 900,
//! no scrolling), and leaves screenshots for humans to look at in `target/tmp/`
//! (`report-first-screen.png`, `report-screenshot.png`). Chromium missing is a failure, never a
//! skip: the report is the product, and `scripts/install-test-deps` installs it.
//!
//! The first-screen check measures the laid-out page: the test copies the report with a small
//! script appended (the report itself has none) that records which comparison charts, legend
//! keys and safety verdicts lie entirely inside the 1280 x 900 viewport, and reads that record
//! back from Chromium's `--dump-dom`.

use std::path::Path;
use std::process::Command;

fn chromium() -> String {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return name.to_string();
        }
    }
    panic!(
        "headless Chromium is not installed: run scripts/install-test-deps (it installs Debian's `chromium`)"
    );
}

fn headless(browser: &str, profile: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn chromium_renders_the_report_with_its_charts_and_tables() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let dir = super::synthetic_run(tmp.path(), "run", "2026-01-01T00:00:00Z", true);
    let report = lockbench_report::html::write_report(&dir).unwrap();
    let url = format!("file://{}", report.display());

    let dom = headless(
        &browser,
        &tmp.path().join("profile-dom"),
        &["--dump-dom", &url],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    let svgs = dom.matches("<svg").count();
    assert!(svgs >= 10, "only {svgs} charts in the rendered DOM");
    assert!(
        dom.matches("<polyline").count() >= 10,
        "charts without lines"
    );
    assert!(dom.matches("<rect").count() >= 50, "charts without bars");
    assert!(
        dom.matches("<table").count() >= 3,
        "tables missing from the rendered DOM"
    );
    assert!(
        dom.contains("VIOLATED"),
        "the violation is not in the rendered table"
    );

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &tmp.path().join("profile-shot"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,3000",
            &url,
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "blank screenshot?"
    );
    eprintln!("screenshot: {}", shot.display());
}

/// Appended to a copy of the report: writes what lies inside the first screen into
/// `<pre id="probe">` as JSON. The fold is fixed at 900 px: with `--dump-dom` headless Chromium
/// reserves part of the window height for its (invisible) browser frame, while the width is the
/// page's, so the layout is the one a 1280 x 900 screenshot shows.
const PROBE: &str = r#"<script>
const inside = el => { const r = el.getBoundingClientRect();
  return r.height > 0 && r.top >= 0 && r.bottom <= 900 && r.right <= window.innerWidth; };
const out = {
  width: window.innerWidth,
  charts: [...document.querySelectorAll('#glance figure svg')].map(inside),
  legend: [...document.querySelectorAll('#glance .legend .key')].filter(inside).map(e => e.textContent),
  verdicts: [...document.querySelectorAll('#summary td.safety')].filter(inside)
    .map(e => [e.closest('tr').querySelector('td').textContent, e.textContent]),
};
const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

#[test]
fn the_first_screen_compares_every_backend_and_shows_each_verdict() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let dir = super::synthetic_run(tmp.path(), "run", "2026-01-01T00:00:00Z", true);
    let report = lockbench_report::html::write_report(&dir).unwrap();
    let html = std::fs::read_to_string(&report).unwrap();
    let probe = dir.join("probe.html");
    std::fs::write(&probe, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();

    // The screenshot first, so a failure below leaves it to look at.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-first-screen.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &tmp.path().join("profile-first"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
            &format!("file://{}", report.display()),
        ],
    );
    assert!(std::fs::read(&shot).is_ok_and(|png| png.starts_with(b"\x89PNG")));
    eprintln!("first screen: {}", shot.display());

    let dom = headless(
        &browser,
        &tmp.path().join("profile-probe"),
        &[
            "--window-size=1280,900",
            "--dump-dom",
            &format!("file://{}", probe.display()),
        ],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    let json = dom
        .split_once("<pre id=\"probe\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(j, _)| {
            j.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .expect("the probe wrote no record: did the page load?");
    let seen: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(seen["width"], 1280, "viewport: {seen}");

    let charts = seen["charts"].as_array().unwrap();
    assert!(
        charts.len() >= 2 && charts.iter().all(|c| c == true),
        "the comparison charts (throughput over time, acquire spectrum) must fit the first screen: {seen}"
    );
    let mut backends = vec!["zk-fair", "redis-broken-nonx"];
    backends.extend(super::OTHERS);
    let legend: Vec<&str> = seen["legend"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let verdicts: Vec<(&str, &str)> = seen["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v[0].as_str().unwrap(), v[1].as_str().unwrap()))
        .collect();
    for b in &backends {
        assert!(
            legend.contains(b),
            "{b} not in the first screen's legend: {seen}"
        );
        let verdict = verdicts
            .iter()
            .find(|(name, _)| name == b)
            .unwrap_or_else(|| panic!("{b}'s safety verdict is not on the first screen: {seen}"));
        let want = if *b == "redis-broken-nonx" {
            "VIOLATED"
        } else {
            "ok"
        };
        assert!(verdict.1.starts_with(want), "{b}: {verdict:?}");
    }
}

/// The attribute values of `attr` (`href`, `src`) in `dom`.
fn attributes<'a>(dom: &'a str, attr: &str) -> Vec<&'a str> {
    let open = format!(" {attr}=\"");
    dom.match_indices(&open)
        .filter_map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// Table cells with nothing in them, with what precedes each for the message.
fn empty_cells(dom: &str) -> Vec<String> {
    let mut empty = Vec::new();
    for (i, _) in dom.match_indices("<td") {
        let Some(open_end) = dom[i..].find('>') else {
            continue;
        };
        let body = &dom[i + open_end + 1..];
        let Some(close) = body.find("</td>") else {
            continue;
        };
        if body[..close].trim().is_empty() {
            empty.push(dom[i.saturating_sub(200)..i + open_end + 1].to_string());
        }
    }
    empty
}

/// Renders `page` in Chromium with its console logged and fails on a console message (a
/// script error, a resource that failed to load), a link or source outside the page's folder,
/// a relative link to no file, or an empty table cell.
fn audit(browser: &str, profile: &Path, page: &Path) {
    let url = format!("file://{}", page.display());
    let out = headless(
        browser,
        profile,
        &["--enable-logging=stderr", "--v=0", "--dump-dom", &url],
    );
    let console: Vec<&str> = std::str::from_utf8(&out.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Failed to load"))
        .collect();
    assert!(console.is_empty(), "{}: {console:#?}", page.display());
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("<table"), "{}: no table", page.display());
    let base = page.parent().unwrap();
    for link in attributes(&dom, "href")
        .into_iter()
        .chain(attributes(&dom, "src"))
    {
        assert!(
            !link.contains("://") && !link.starts_with("//"),
            "{}: links outside the site: {link}",
            page.display()
        );
        let target = link.split('#').next().unwrap();
        if !target.is_empty() {
            assert!(
                base.join(target).exists(),
                "{}: a link to nothing: {link}",
                page.display()
            );
        }
    }
    let empty = empty_cells(&dom);
    assert!(
        empty.is_empty(),
        "{}: empty cells after: {empty:#?}",
        page.display()
    );
}

/// A verdict suite's directory under `parent`: its parts synthetic runs (each rendered), its
/// verdict decided from them and its page written.
fn synthetic_suite(parent: &Path) -> std::path::PathBuf {
    use lockbench_results::decision::{self, Part, PartRun, SHAPES, Subject};
    let suite = parent.join("verdict-suite");
    let parts: Vec<Part> = SHAPES
        .iter()
        .map(|&s| Part::Shape(s))
        .chain([Part::HolderPause, Part::Faults, Part::Herd])
        .collect();
    let mut results = Vec::new();
    for p in &parts {
        let dir = super::synthetic_run(&suite, &p.dir_name(), "2026-01-01T00:00:00Z", true);
        lockbench_report::html::write_report(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
        results.push(serde_json::from_str::<lockbench_results::RunResults>(&text).unwrap());
    }
    let runs: Vec<PartRun<'_>> = parts
        .iter()
        .zip(&results)
        .map(|(&part, results)| PartRun {
            part,
            dir: part.dir_name(),
            results,
            wall_s: 12.0,
            skipped: Default::default(),
        })
        .collect();
    let subjects: Vec<Subject> = results[0]
        .results
        .iter()
        .map(|r| Subject {
            backend: r.backend.clone(),
            broken: r.backend.contains("broken"),
            no_leader: None,
        })
        .collect();
    let header = decision::Decision {
        schema_version: decision::DECISION_SCHEMA_VERSION,
        started_at: "2026-01-01T00:00:00Z".into(),
        seed: 7,
        budget_s: 1200.0,
        wall_s: 900.0,
        complete: true,
        cluster: "managed".into(),
        connections: results[0].connections.clone(),
        environment: results[0].environment.clone(),
        slo_p99_ms: 50.0,
        parts: Vec::new(),
        rows: Vec::new(),
        picks: Vec::new(),
    };
    let d = decision::decide(header, &subjects, &runs);
    lockbench_report::decision::write(&suite, &d).unwrap();
    suite
}

/// The verdict suite's page, from parts that are runs of their own (each rendered), passes
/// the same checks as a published site: its every cell filled, every link to a part's report.
#[test]
fn the_verdict_page_renders_without_console_errors_external_urls_or_empty_cells() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let page = synthetic_suite(tmp.path()).join("report.html");
    audit(&browser, &tmp.path().join("profile-verdict"), &page);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("class=\"broken\" id=\"row-redis-broken-nonx\""),
        "{html}"
    );
    assert!(html.contains("shape-8x1/report.html#summary"));
}

/// A site of two runs of one scenario and a verdict suite, rendered page by page in Chromium with its console
/// logged: no console message (a script error, a resource that failed to load), no link or
/// source outside the site, every relative link resolving to a file of the site, and no
/// empty table cell.
#[test]
fn a_published_site_renders_without_console_errors_external_urls_or_empty_cells() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("results");
    let older = super::synthetic_run(&runs, "run-older", "2026-01-01T00:00:00Z", false);
    let newer = super::synthetic_run(&runs, "run-newer", "2026-01-02T00:00:00Z", true);
    for run in [&older, &newer] {
        lockbench_report::html::write_report(run).unwrap();
    }
    let suite = synthetic_suite(&runs);
    let out = tmp.path().join("site");
    let site = lockbench_report::site::write_site(&out, &[older, newer, suite]).unwrap();
    assert_eq!(site.runs, 3);
    assert_eq!(site.comparisons.len(), 1, "{site:?}");

    let mut pages = vec![site.index.clone(), site.comparisons[0].clone()];
    pages.push(out.join("run-newer").join("report.html"));
    pages.push(out.join("verdict-suite").join("report.html"));
    for (n, page) in pages.iter().enumerate() {
        audit(
            &browser,
            &tmp.path().join(format!("profile-site-{n}")),
            page,
        );
    }
    // The index links both runs' reports and the comparison, whose page names both runs.
    let index = std::fs::read_to_string(&site.index).unwrap();
    for link in [
        "run-older/report.html",
        "run-newer/report.html",
        "compare-synthetic.html",
        "verdict-suite/report.html",
    ] {
        assert!(index.contains(link), "the index lacks {link}");
    }
    let compare = std::fs::read_to_string(&site.comparisons[0]).unwrap();
    assert!(compare.contains("run-older") && compare.contains("run-newer"));
}

/// The site test's checks, on a page broken each way they look for: a script error in the
/// console, a link outside the site, a source that is not there, an empty cell.
#[test]
fn the_site_checks_catch_a_page_broken_each_way() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><table><tr><td> </td><td>1</td></tr></table><img src=\"missing.png\">\
         <script>console.error(\"boom\")</script><a href=\"https://example.com\">x</a></body></html>",
    )
    .unwrap();
    let out = headless(
        &browser,
        &tmp.path().join("profile"),
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            &format!("file://{}", page.display()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("CONSOLE") && l.contains("boom")),
        "{stderr}"
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(attributes(&dom, "href"), ["https://example.com"]);
    assert_eq!(attributes(&dom, "src"), ["missing.png"]);
    assert!(!tmp.path().join("missing.png").exists());
    assert_eq!(empty_cells(&dom).len(), 1, "{dom}");
}
