//! Lock libraries behind the adapter protocol (issue 21), end to end against the managed
//! cluster: a real library (redis-py, installed by `scripts/install-adapters`) and
//! lockbench's own `redis-setnx` behind the protocol (`lib:rust-setnx`) run like any backend;
//! a user's own manifest by path needs no change to lockbench; a broken adapter makes the run
//! an error naming the library and the line, never a verdict.

use crate::common::{self, result_of, results, text};

/// The `libraries` scenario: every built-in adapter beside lockbench's own recipe for its
/// system, each valid, each measured by the servers' own counters.
#[test]
fn every_library_runs_through_the_protocol_like_any_backend() {
    let dir = common::scratch("adapters", "libraries");
    let (out, out_dir) = common::run_scenario(
        &dir,
        "libraries",
        &["duration=1s", "warmup=300ms", "workload.clients=4"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let all = r["results"].as_array().unwrap();
    assert_eq!(all.len(), 11, "{}", text(&out));
    for res in all {
        let name = res["backend"].as_str().unwrap();
        assert_eq!(res["status"], "ok", "{name}: {res}");
        assert_eq!(res["safety"]["verdict"], "valid", "{name}: {res}");
        assert!(res["acquisitions"].as_u64().unwrap() > 0, "{name}");
    }
    for (name, library) in [
        ("lib:rust-setnx", "lockbench redis-setnx"),
        ("lib:redis-py", "redis-py 5.2.1"),
    ] {
        let res = result_of(&r, name);
        assert_eq!(res["status"], "ok", "{name}: {res}");
        assert_eq!(res["safety"]["verdict"], "valid", "{name}: {res}");
        assert!(res["acquisitions"].as_u64().unwrap() > 0, "{name}");
        let knobs = res["recipe"]["knobs"].to_string();
        assert!(knobs.contains(library), "{name}: {knobs}");
        // The adapter counts nothing itself; the servers' own counters still do.
        assert!(
            res["server_ops_per_acquisition"].as_f64().unwrap() >= 1.0,
            "{name}: {res}"
        );
    }
    // Our own recipe behind the protocol keeps its token; redis-py's Lock has none.
    let rust = result_of(&r, "lib:rust-setnx")["recipe"]["fencing"].to_string();
    assert!(rust.contains("INCR"), "{rust}");
    let py = result_of(&r, "lib:redis-py")["recipe"]["fencing"].to_string();
    assert!(py.contains("none"), "{py}");
}

#[test]
fn a_broken_adapter_by_path_fails_the_run_naming_the_library_and_the_line() {
    let dir = common::scratch("adapters", "broken");
    let adapter = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../backends/adapter/tests/broken_adapter.py")
        .canonicalize()
        .unwrap();
    let manifest = dir.join("adapter.toml");
    std::fs::write(
        &manifest,
        format!(
            "library = \"garbage\"\nsystem = \"redis\"\ncommand = [\"python3\", \"{}\", \"garbage-answer\"]\n",
            adapter.display()
        ),
    )
    .unwrap();
    let backend = format!("backends={}", manifest.display());
    let (out, out_dir) =
        common::run_scenario(&dir, "quick", &[&backend, "duration=1s", "warmup=0s"]);
    assert!(
        !out.status.success(),
        "a broken adapter is never a pass: {}",
        text(&out)
    );
    let r = results(&out_dir);
    let res = &r["results"][0];
    assert_eq!(res["status"], "error", "{res}");
    let error = res["error"].to_string();
    assert!(
        error.contains("broken-garbage-answer") && error.contains("\\\"OK\\\""),
        "names the library and the line: {error}"
    );
}

/// Kleppmann's pause on libraries: the holder's worker process is stopped with its adapter
/// (the library's own threads included), so the library loses the lock; Curator's token (the
/// lock node's sequence) lets the resource reject the late write, redis-py has none.
#[test]
fn a_paused_library_loses_its_lock_and_only_a_token_saves_the_resource() {
    let dir = common::scratch("adapters", "fencing");
    let (out, out_dir) = common::run_scenario(
        &dir,
        "fencing",
        &["backends=lib:redis-py,lib:curator", "duration=6s"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    for name in ["lib:redis-py", "lib:curator"] {
        let res = result_of(&r, name);
        assert!(
            res["fencing"]["holder_pauses"].as_u64().unwrap() >= 1,
            "{name}: {res}"
        );
        assert_eq!(res["safety"]["verdict"], "invalid", "{name}: {res}");
    }
    let py = &result_of(&r, "lib:redis-py")["safety"];
    assert!(
        py["writes_after_lock_lost_accepted"].as_u64().unwrap() >= 1,
        "no token: the late write lands: {py}"
    );
    let curator = &result_of(&r, "lib:curator")["safety"];
    assert_eq!(curator["writes_after_lock_lost_accepted"], 0, "{curator}");
    assert_eq!(curator["stale_writes_accepted"], 0, "{curator}");
    assert!(
        curator["writes_after_lock_lost_rejected"]
            .as_u64()
            .unwrap_or(0)
            + curator["stale_writes_rejected"].as_u64().unwrap()
            >= 1,
        "the token rejects it: {curator}"
    );
}
