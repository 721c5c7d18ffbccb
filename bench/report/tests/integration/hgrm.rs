//! The `.hgrm` files are HdrHistogram's percentile distribution exactly as Java prints it,
//! checked by an independent implementation: `tests/hgrm_check.py` decodes each `.hdr` with the
//! `hdrhistogram` package from PyPI and requires the `.hgrm` beside it to equal Java's output
//! line for line. Python or the package missing is a failure, never a skip
//! (`scripts/install-test-deps` installs both, the package in the project's `.venv`, which the
//! script re-executes itself in when the `python3` on `PATH` lacks it).

use hdrhistogram::Histogram;
use lockbench_report::RunDir;
use std::path::Path;
use std::process::Command;

/// Runs the checker on `dir` and fails with its output when it finds a difference.
fn check(dir: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hgrm_check.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .output()
        .expect("python3 is not installed: run scripts/install-test-deps");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

/// A small xorshift, so the samples are fixed without a dependency.
fn samples(n: usize, mut seed: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |_| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    })
}

#[test]
fn hgrm_files_equal_java_output_per_an_independent_decoder() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "hgrm", Some(&tmp.path().join("run"))).unwrap();

    // Latencies shaped like a lock's: a body around 1-3 ms, a tail to ~2 s (µs, auto-resizing
    // like the runner's histograms).
    let mut lock = Histogram::<u64>::new(3).unwrap();
    for (i, r) in samples(200_000, 7).enumerate() {
        let body = 800 + r % 2_000;
        let v = if i % 997 == 0 {
            body * (1 + r % 1_000)
        } else {
            body
        };
        lock.record(v).unwrap();
    }
    run.write_histogram("zk-fair", "acquire", &lock).unwrap();

    // Bounded like HdrHistogram's examples, with repeated values and a zero.
    let mut bounded = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for v in 0..=10_000u64 {
        bounded.record_n(v, 1 + v % 3).unwrap();
    }
    run.write_histogram("etcd-lease", "handoff", &bounded)
        .unwrap();

    // One sample only, and none at all.
    let mut one = Histogram::<u64>::new(3).unwrap();
    one.record(42).unwrap();
    run.write_histogram("redis-setnx", "acquire", &one).unwrap();
    run.write_histogram("redlock", "acquire", &Histogram::<u64>::new(3).unwrap())
        .unwrap();

    let out = check(run.path());
    assert!(out.contains("4 histogram(s), 0 difference(s)"), "{out}");

    // The checker is alive: a per-row count (the old bug) is caught.
    let hgrm = run.path().join("histograms/etcd-lease.handoff.hgrm");
    let text = std::fs::read_to_string(&hgrm).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let row = &mut lines[3];
    let total: String = row.split_whitespace().nth(2).unwrap().to_string();
    *row = row.replacen(
        &format!(" {total} "),
        &format!(" {:>w$} ", 1, w = total.len()),
        1,
    );
    std::fs::write(&hgrm, lines.join("\n") + "\n").unwrap();
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hgrm_check.py"))
        .arg(run.path())
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a wrong TotalCount passed the check: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
