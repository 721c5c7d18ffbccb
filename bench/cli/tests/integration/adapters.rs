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

/// The contract every backend meets (`backends/conformance`), held against every built-in
/// adapter through the registry, as a run builds them: tokens grow, one holder at a time, a
/// dead holder's lock (its process killed) is taken over after the lock life and not before.
#[test]
fn every_builtin_adapter_meets_the_backend_contract() {
    // `{lockbench}` in a manifest is the running lockbench; here that is the test binary.
    // SAFETY: set before this test starts any thread of its own.
    unsafe { std::env::set_var("LOCKBENCH_EXE", env!("CARGO_BIN_EXE_lockbench")) };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let endpoints = rt.block_on(lockbench_cluster::for_tests());
    let text =
        "name = \"contract\"\nbackends = [\"redis-setnx\"]\n[workload]\nclients = 3\nkeys = 16\n";
    let sets: Vec<String> = [
        "redis.ttl=1s",
        "redlock.ttl=1s",
        "zookeeper.session_timeout=2s",
        "etcd.lease_ttl=2s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let scenario = lockbench_registry::load_scenario("contract", text, &sets).unwrap();
    let libs = [
        "lib:rust-setnx",
        "lib:redis-py",
        "lib:python-redis-lock",
        "lib:pottery",
        "lib:kazoo",
        "lib:curator",
        "lib:etcd-go",
    ];
    for name in libs {
        let kind = lockbench_registry::parse_backend(name).unwrap();
        let b = lockbench_registry::backend(kind, &scenario, &endpoints)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let life = lockbench_registry::expiry(&scenario, kind);
        rt.block_on(async {
            lockbench_conformance::acquire_release_and_tokens_grow(&b).await;
            lockbench_conformance::mutual_exclusion(&b, 3, 5).await;
            lockbench_conformance::dead_holders_lock_is_taken_over(
                &b,
                life,
                std::time::Duration::from_secs(4),
            )
            .await;
        });
        assert_eq!(lockbench_core::Backend::broken(&b), None, "{name}");
    }
}
