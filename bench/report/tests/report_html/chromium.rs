//! Opens a rendered report in headless Chromium (Debian's `chromium`), checks that the DOM it
//! builds has the charts and tables, and leaves a screenshot for humans to look at in
//! `target/tmp/report-screenshot.png`. Chromium missing is a failure, never a skip: the report
//! is the product, and `scripts/install-deps` installs it.

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
        "headless Chromium is not installed: run scripts/install-deps (it installs Debian's `chromium`)"
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
