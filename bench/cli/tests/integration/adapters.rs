//! Lock libraries behind the adapter protocol, end to end against the managed
//! cluster: a real library (redis-py, installed by `scripts/install-adapters`) and
//! lockbench's own `redis-setnx` behind the protocol (`lib:rust-setnx`) run like any backend;
//! a user's own manifest by path needs no change to lockbench; a broken adapter makes the run
//! an error naming the library and the line, never a verdict.

use crate::common::{self, result_of, results, text};

/// The `libraries` scenario: every built-in adapter beside lockbench's own recipe for its
/// system, each granting locks and judged valid, the Redis libraries measured by the servers'
/// own counters. A 2 s warm-up: a JVM library's first lock (its start, its session, its lock
/// path) can take over a second on a loaded machine. Each library must have granted a lock in
/// the run (warm-up included), not in the 1 s window itself: at a load average of 46 Curator's
/// four JVMs went 15 s without a grant after their first, while the Redis libraries, whose
/// window figures are checked below, kept granting.
#[test]
fn every_library_runs_through_the_protocol_like_any_backend() {
    let dir = common::scratch("adapters", "libraries");
    let (out, out_dir) = common::run_scenario(
        &dir,
        "libraries",
        &["duration=1s", "warmup=2s", "workload.clients=4"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let all = r["results"].as_array().unwrap();
    assert_eq!(all.len(), 11, "{}", text(&out));
    for res in all {
        let name = res["backend"].as_str().unwrap();
        assert_eq!(res["status"], "ok", "{name}: {res}");
        assert_eq!(res["safety"]["verdict"], "valid", "{name}: {res}");
        assert!(
            res["acquisitions_total"].as_u64().unwrap() > 0,
            "{name}: {res}\n{}",
            text(&out)
        );
    }
    for (name, library) in [
        ("lib:rust-setnx", "lockbench redis-setnx"),
        ("lib:redis-py", "redis-py 5.2.1"),
        ("lib:python-redis-lock", "python-redis-lock 4.0.0"),
    ] {
        let res = result_of(&r, name);
        assert_eq!(res["status"], "ok", "{name}: {res}");
        assert_eq!(res["safety"]["verdict"], "valid", "{name}: {res}");
        assert!(res["acquisitions"].as_u64().unwrap() > 0, "{name}");
        let knobs = res["recipe"]["knobs"].to_string();
        assert!(knobs.contains(library), "{name}: {knobs}");
        // The adapter counts nothing itself; the servers' own counters still do, every
        // command the library sends (its manifest's `[counters]`): an acquire and a release
        // are two at least (a few acquisitions may still be held at the stop).
        assert!(
            res["server_ops_per_acquisition"].as_f64().unwrap() >= 1.9,
            "{name}: {res}"
        );
    }
    // Our own recipe behind the protocol keeps its token; redis-py's Lock has none.
    let rust = result_of(&r, "lib:rust-setnx")["recipe"]["fencing"].to_string();
    assert!(rust.contains("INCR"), "{rust}");
    let py = result_of(&r, "lib:redis-py")["recipe"]["fencing"].to_string();
    assert!(py.contains("none"), "{py}");
}

/// A manifest by path for `broken_adapter.py MODE ARGS...`, written into `dir`.
fn broken_manifest(dir: &std::path::Path, mode: &str, args: &[&str]) -> std::path::PathBuf {
    let adapter = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../backends/adapter/tests/broken_adapter.py")
        .canonicalize()
        .unwrap();
    let argv: Vec<String> = [adapter.display().to_string(), mode.to_string()]
        .into_iter()
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!(", \"{a}\""))
        .collect();
    let manifest = dir.join(format!("{mode}.toml"));
    std::fs::write(
        &manifest,
        format!(
            "library = \"broken-{mode}\"\nsystem = \"redis\"\ncommand = [\"python3\"{}]\n",
            argv.concat()
        ),
    )
    .unwrap();
    manifest
}

/// The run's one result: an error naming the library's hello name and `line`, no verdict.
fn assert_named_error(
    out: &std::process::Output,
    out_dir: &std::path::Path,
    mode: &str,
    line: &str,
) {
    assert!(
        !out.status.success(),
        "a broken adapter is never a pass: {}",
        text(out)
    );
    let r = results(out_dir);
    let res = &r["results"][0];
    assert_eq!(res["status"], "error", "{mode}: {res}");
    assert_eq!(res["safety"]["verdict"], "unknown", "{mode}: {res}");
    let error = res["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("broken-{mode}")) && error.contains(line),
        "{mode}: names the library and the line: {error}"
    );
}

#[test]
fn a_broken_adapter_by_path_fails_the_run_naming_the_library_and_the_line() {
    let dir = common::scratch("adapters", "broken");
    let manifest = broken_manifest(&dir, "garbage-answer", &[]);
    let backend = format!("backends={}", manifest.display());
    let (out, out_dir) =
        common::run_scenario(&dir, "quick", &[&backend, "duration=1s", "warmup=0s"]);
    assert_named_error(&out, &out_dir, "garbage-answer", "\"OK\"");
}

/// An adapter whose library answers without calling a server (`broken_adapter.py good` keeps
/// its locks in memory) makes many acquisitions that the Redis server it names never counted:
/// the run says so, naming the backend, and its verdict is no verdict.
#[test]
fn an_adapter_that_never_calls_its_servers_is_named() {
    let dir = common::scratch("adapters", "unseen");
    let manifest = broken_manifest(&dir, "good", &[]);
    let backend = format!("backends={}", manifest.display());
    // One client: one adapter process, whose in-memory lock alone keeps mutual exclusion, so
    // only the servers' count can make the verdict unknown.
    let (out, out_dir) = common::run_scenario(
        &dir,
        "quick",
        &[&backend, "duration=2s", "warmup=0s", "workload.clients=1"],
    );
    assert!(
        !out.status.success(),
        "no verdict is never a pass: {}",
        text(&out)
    );
    let r = results(&out_dir);
    let res = &r["results"][0];
    assert!(res["acquisitions"].as_u64().unwrap() >= 100, "{res}");
    let unseen = res["requests"]["unseen"].as_str().expect("unseen");
    assert!(unseen.contains("fewer than one each"), "{unseen}");
    assert_eq!(res["safety"]["verdict"], "unknown", "{res}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "WARNING: {}: the servers counted",
            manifest.display()
        )),
        "{}",
        text(&out)
    );
}

/// A broken adapter where faults need it: clients in worker processes (on client hosts), whose
/// adapters break at their hello or go bad mid-run (garbage, an exit, silence after 30 good
/// answers). The worker tells the coordinator at once, the run stops and is an error naming
/// the library and the line, its verdict `unknown`: within seconds, not at the end of the
/// scenario's minute.
#[test]
fn a_broken_adapter_in_a_worker_process_ends_the_run_within_seconds() {
    let dir = common::scratch("adapters", "broken-worker");
    for (mode, args, line) in [
        ("garbage-hello", &[][..], "Picked up _JAVA_OPTIONS"),
        (
            "garbage-after",
            &["30"][..],
            "\"Traceback (most recent call last):\"",
        ),
        ("exit-after", &["30"][..], "the adapter exited"),
        (
            "hang-after",
            &["31"][..],
            "no answer to request 32 (Release) within 5s",
        ),
    ] {
        let manifest = broken_manifest(&dir, mode, args);
        let backend = format!("backends={}", manifest.display());
        let out_dir = dir.join(mode);
        std::fs::create_dir_all(&out_dir).unwrap();
        let started = std::time::Instant::now();
        let (out, run) = common::run_scenario(
            &out_dir,
            "quick",
            &[
                &backend,
                "duration=60s",
                "warmup=0s",
                "workload.clients=2",
                "workload.processes=workers",
            ],
        );
        let took = started.elapsed();
        assert_named_error(&out, &run, mode, line);
        // Workers on client hosts and a Python start each on a loaded machine: the run's
        // own start takes seconds; the break is reported within the protocol's 5 s of it.
        assert!(
            took < std::time::Duration::from_secs(30),
            "{mode}: the run went on after the break ({took:?}): {}",
            text(&out)
        );
    }
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
        // 10 s: Curator's holder is stopped for twice its 2 s lock life after a grant that a
        // loaded machine may give it late, and its write must still land inside the run.
        &["backends=lib:redis-py,lib:curator", "duration=10s"],
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
    // Server-side truth: Curator's lock nodes are read by zk-curator's observer (the
    // manifest's [observe]), so the servers' view names the paused holder's loss; redis-py's
    // value names no client, and the result says why there is no view.
    let truth = &result_of(&r, "lib:curator")["server_truth"];
    assert!(truth["note"].is_null(), "{truth}");
    assert!(
        truth["figures"]["observations"].as_u64().unwrap() >= 2
            && truth["figures"]["lost_while_held"].as_u64().unwrap() >= 1,
        "the servers saw Curator's paused holder lose its lock: {truth}"
    );
    let truth = &result_of(&r, "lib:redis-py")["server_truth"];
    assert!(
        truth["note"].as_str().unwrap_or("").contains("[observe]"),
        "{truth}"
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

/// `lockbench compare` on two runs of adapter backends: each library is
/// compared with itself like any recipe, every metric present on both sides, none missing.
#[test]
fn compare_reads_two_runs_of_adapter_backends() {
    let dir = common::scratch("adapters", "compare");
    let mut runs = Vec::new();
    for name in ["base", "new"] {
        let run_dir = dir.join(name);
        std::fs::create_dir_all(&run_dir).unwrap();
        // Each run its own keys (an adapter's prefix follows the scenario's text): a holder the
        // first run's end cut short leaves its key for the lock's life, 10 s, which a second
        // run on the same key would spend waiting.
        let prefix = format!(
            "redis.prefix=lockbench-compare-{name}-{}:",
            std::process::id()
        );
        let (out, out_dir) = common::run_scenario(
            &run_dir,
            "quick",
            &[
                "backends=lib:rust-setnx,lib:redis-py",
                "duration=1s",
                "warmup=300ms",
                "workload.clients=2",
                &prefix,
            ],
        );
        assert!(out.status.success(), "{name}: {}", text(&out));
        runs.push(out_dir);
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("compare")
        .args(&runs)
        .args(["--format", "json"])
        .output()
        .unwrap();
    // 0 or 1 (a 1 s run on a busy machine may regress); 2 would be unreadable input.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("compare's JSON");
    assert_eq!(c["missing"], serde_json::json!([]), "{c}");
    for backend in ["lib:rust-setnx", "lib:redis-py"] {
        let rows: Vec<&serde_json::Value> = c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["backend"] == backend)
            .collect();
        let throughput = rows
            .iter()
            .find(|r| r["metric"] == "throughput")
            .unwrap_or_else(|| panic!("{backend}: no throughput row: {c}"));
        assert!(
            throughput["base"].as_f64().unwrap() > 0.0 && throughput["new"].as_f64().unwrap() > 0.0,
            "{backend}: {throughput}"
        );
    }
}
