//! End-to-end tests of the `lockbench` binary against the real managed cluster.
//!
//! Runs use `--cluster external:FILE` with the managed cluster's endpoints, so a test never
//! starts or stops servers that other tests are using, and `--out` into a fresh directory.

use crate::common;

use crate::common::{result_of, results, text};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("run lockbench")
}

#[test]
fn every_backend_excludes_with_8_clients_on_one_key_and_the_results_are_complete() {
    let dir = common::scratch("cli", "all");
    // PostgreSQL's counters are this run's statements, tagged with its namespace: its own, so
    // a quick run in another test (logging) is not counted with it.
    let namespace = format!("postgres.namespace={}", std::process::id());
    // NATS's counters are the connections named after the run's key prefix: its own too.
    let prefix = format!("nats.prefix=cli{}", std::process::id());
    // MariaDB's counters are this run's statements, by the tag its lock names' prefix gives.
    let maria = format!("mariadb.prefix=cli{}", std::process::id());
    let (out, out_dir) = common::run_scenario(
        &dir,
        "quick",
        &[
            "duration=2s",
            "warmup=500ms",
            "workload.hold=200us",
            &namespace,
            &prefix,
            &maria,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["complete"], true);
    // What produced it: the build with its commit (`unknown commit` outside a git
    // checkout), the machine's load at both ends of the run.
    let env = &r["environment"];
    assert!(
        env["lockbench_version"]
            .as_str()
            .is_some_and(|v| v.starts_with(env!("CARGO_PKG_VERSION")) && v.ends_with(')')),
        "{env}"
    );
    for when in ["load_average", "load_average_end"] {
        assert_eq!(env[when].as_array().map(Vec::len), Some(3), "{when}: {env}");
    }
    for system in ["zookeeper", "etcd", "redis", "postgres", "nats"] {
        assert!(
            r["environment"]["servers"][system].is_string(),
            "{system} version missing"
        );
    }
    let all = r["results"].as_array().unwrap();
    let quick = include_str!("../../../../scenarios/quick.toml");
    let listed = quick
        .lines()
        .find_map(|l| l.strip_prefix("backends = "))
        .map(|l| l.matches('"').count() / 2);
    assert_eq!(Some(all.len()), listed, "{}", text(&out));
    for res in all {
        let name = res["backend"].as_str().unwrap();
        assert_eq!(res["status"], "ok", "{name}: {res}");
        assert_eq!(res["safety"]["verdict"], "valid", "{name}: {res}");
        assert_eq!(res["safety"]["mutex_violations"], 0, "{name}");
        assert_eq!(res["safety"]["stale_writes_accepted"], 0, "{name}");
        assert!(
            res["acquisitions"].as_u64().unwrap() > 0,
            "{name}: no acquisitions"
        );
        assert!(res["throughput_per_s"].as_f64().unwrap() > 0.0, "{name}");
        for field in ["p50", "p90", "p99", "p999", "max"] {
            assert!(res["acquire_latency_us"][field].is_u64(), "{name}: {field}");
        }
        assert!(
            res["handoff_latency_us"]["p50"].is_u64(),
            "{name}: 8 clients on 1 key must hand off"
        );
        assert!(res["fairness_jain"].as_f64().unwrap() > 0.0, "{name}");
        assert_eq!(res["per_client_acquisitions"].as_array().unwrap().len(), 8);
        assert!(
            res["server_ops_per_acquisition"].as_f64().unwrap() >= 1.0,
            "{name}: {res}"
        );
        assert!(
            res["requests"]["server_counted"].as_u64().unwrap() > 0,
            "{name}: {res}"
        );
        assert!(res["recipe"]["waits_by"].is_string(), "{name}");
    }
    // Redis counts exactly what lockbench sends. The only slack is at the stop: an acquire still
    // waiting is cancelled, so a request it counted may never have left the client, and closing
    // that client then takes back whatever the cut-short acquire may have set, a request the
    // client no longer counts (at most one each per client and server).
    // PostgreSQL likewise (pg_stat_statements, this run's own statements by their tag): a
    // statement cut short at the stop may be counted on one side only.
    for (name, servers) in [
        ("redis-setnx", 1u64),
        ("redlock", 5),
        ("pg-advisory", 1),
        ("pg-try-advisory", 1),
        ("pg-advisory-xact", 1),
    ] {
        let q = &result_of(&r, name)["requests"];
        let client = q["client_counted"].as_u64().unwrap();
        let server = q["server_counted"].as_u64().unwrap();
        assert!(
            client.abs_diff(server) <= 8 * servers,
            "{name}: lockbench counted {client} requests, Redis {server}"
        );
    }
    // Tokens are reported only where the recipe has them.
    assert!(
        result_of(&r, "redlock")["safety"]["unfenced_writes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(result_of(&r, "zk-fair")["safety"]["unfenced_writes"], 0);

    let scenario = std::fs::read_to_string(out_dir.join("scenario.toml")).unwrap();
    assert!(
        scenario.contains("seed = 1") && scenario.contains("duration = \"2s\""),
        "{scenario}"
    );
    let history = common::history_text(&out_dir);
    assert!(history.lines().count() > 100);
    assert!(history.lines().all(|l| l.starts_with("{\"backend\":")));
    for name in ["zk-fair", "redlock"] {
        for ext in ["hgrm", "hdr"] {
            let f = out_dir
                .join("histograms")
                .join(format!("{name}.acquire.{ext}"));
            assert!(
                f.metadata().map(|m| m.len() > 0).unwrap_or(false),
                "{}",
                f.display()
            );
        }
    }
    // The .hgrm files are HdrHistogram's format, per an independent decoder (PyPI hdrhistogram).
    let hgrm = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../report/tests/hgrm_check.py"
        ))
        .arg(&out_dir)
        .output()
        .expect("python3 is not installed: run scripts/install-test-deps");
    assert!(
        hgrm.status.success(),
        "{}{}",
        String::from_utf8_lossy(&hgrm.stdout),
        String::from_utf8_lossy(&hgrm.stderr)
    );
    let report = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    assert!(
        report.matches("<svg").count() >= 10,
        "report has too few charts"
    );
    assert!(dir.join("index.html").exists(), "results index not written");
    let table = String::from_utf8_lossy(&out.stdout);
    for name in [
        "zk-fair",
        "zk-curator",
        "etcd-lease",
        "etcd-lockapi",
        "redis-setnx",
        "redlock",
    ] {
        assert!(table.contains(name), "table lacks {name}:\n{table}");
    }
}

#[test]
fn a_broken_recipe_is_caught_by_the_checkers() {
    let dir = common::scratch("cli", "broken");
    let (out, out_dir) = common::run_scenario(&dir, "broken-recipe", &["duration=2s"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let broken = &result_of(&r, "redis-broken-nonx")["safety"];
    assert_eq!(broken["verdict"], "invalid", "{broken}");
    assert!(broken["mutex_violations"].as_u64().unwrap() > 0, "{broken}");
    assert!(broken["overlap_ms"].as_f64().unwrap() > 0.0, "{broken}");
    let good = result_of(&r, "redis-setnx");
    assert_eq!(good["safety"]["verdict"], "valid", "{good}");
    // Half of the acquires were drawn shared; a recipe without a shared mode took and
    // recorded every one exclusively, so the mutual-exclusion checker judged them all.
    let (shared, exclusive) = (
        &good["shared_lock"]["shared_grants"],
        &good["acquisitions_total"],
    );
    assert_eq!(shared, 0, "{good}");
    assert_eq!(
        &good["shared_lock"]["exclusive_grants"], exclusive,
        "{good}"
    );
    // The shared lock whose writers ignore readers is caught by the verdict.
    let rw = &result_of(&r, "zk-broken-rwlock")["safety"];
    assert_eq!(rw["verdict"], "invalid", "{rw}");
    assert!(rw["rw_conflicts"].as_u64().unwrap() > 0, "{rw}");
    assert_eq!(rw["checks"]["rwlock"]["validity"], "invalid", "{rw}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FINDING: redis-broken-nonx"));
    assert!(
        stdout.lines().any(
            |l| l.starts_with("FINDING: zk-broken-rwlock violated safety: ")
                && l.contains("reader/writer conflict")
        ),
        "{stdout}"
    );
    // The scenario expects exactly this ([expect]): the run passes, and says why.
    assert!(
        stdout.contains("EXPECTATION MET: redis-broken-nonx violated: invalid:")
            && stdout.contains("EXPECTATION MET: zk-broken-rwlock violated: invalid:")
            && stdout.contains("EXPECTATION MET: redis-setnx safe: valid"),
        "{}",
        text(&out)
    );
    let met: Vec<_> = r["expectations"]
        .as_array()
        .expect("expectations")
        .iter()
        .collect();
    assert_eq!(met.len(), 3, "{met:?}");
    assert!(met.iter().all(|e| e["outcome"] == "met"), "{met:?}");
}

/// Regression: zk-rwlock with writers that ignore read nodes (the deliberately broken
/// zk-broken-rwlock) granted a writer next to readers and the run still exited 0. Expected
/// safe, it now fails the run, the kind named.
#[test]
fn a_shared_lock_whose_writers_ignore_readers_fails_the_run() {
    let dir = common::scratch("cli", "broken-rwlock");
    let (out, out_dir) = common::run_scenario(
        &dir,
        "broken-recipe",
        &["duration=1s", "backends=zk-broken-rwlock", "expect={}"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("EXPECTATION FAILED: zk-broken-rwlock safe (implicit): invalid: ")
            && stdout.contains("reader/writer conflict"),
        "{}",
        text(&out)
    );
    let r = results(&out_dir);
    let s = &result_of(&r, "zk-broken-rwlock")["safety"];
    assert_eq!(s["verdict"], "invalid", "{s}");
    assert!(s["rw_conflicts"].as_u64().unwrap() > 0, "{s}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: `lockbench run` exited 0 whatever it found. Now its exit code follows the
/// scenario's expectations, as Jepsen's does: 1 for an invalid result nobody expected or any
/// failed expectation, 2 for an error (a bad `[expect]` entry names its field).
#[test]
fn the_exit_code_follows_the_scenarios_expectations() {
    let dir = common::scratch("cli", "expect");
    // No expectations: an invalid verdict fails the run.
    let (out, out_dir) = common::run_scenario(
        &dir,
        "broken-recipe",
        &["duration=1s", "backends=redis-broken-nonx", "expect={}"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("EXPECTATION FAILED: redis-broken-nonx safe (implicit): invalid:"),
        "{}",
        text(&out)
    );
    let e = &results(&out_dir)["expectations"][0];
    assert_eq!(
        (&e["backend"], &e["expect"], &e["implicit"], &e["outcome"]),
        (
            &"redis-broken-nonx".into(),
            &"safe".into(),
            &true.into(),
            &"failed".into()
        ),
        "{e}"
    );
    // A violation expected where there is none, and a throughput floor nobody reaches; the
    // entry naming a backend this run does not have is said to be unchecked.
    let dir2 = common::scratch("cli", "expect2");
    let (out, out_dir) = common::run_scenario(
        &dir2,
        "broken-recipe",
        &[
            "duration=1s",
            "backends=redis-setnx",
            "expect.violated=redis-setnx",
            "expect.safe=redis-broken-nonx",
            "expect.min_throughput={ all = 1e12 }",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "EXPECTATION FAILED: redis-setnx violated: valid: no violation found",
        "EXPECTATION FAILED: redis-setnx min_throughput: ",
        "expectations not checked (backend not in this run): expect.safe redis-broken-nonx",
    ] {
        assert!(stdout.contains(want), "{want}\n{}", text(&out));
    }
    let outcomes: Vec<_> = results(&out_dir)["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outcomes, ["failed", "failed"]);
    // The same backend named safe and violated: a scenario error naming the field, exit 2 (a
    // backend's own name beats `all`, so `safe = all` with it in `violated` is no error).
    let out = lockbench(&[
        "run",
        "broken-recipe",
        "--set",
        "expect.safe=redis-setnx",
        "--set",
        "expect.violated=redis-setnx",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("expect.violated"), "{}", text(&out));
    let out = lockbench(&["run", "quick", "--set", "expect.safe=zk-fast"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("expect.safe") && text(&out).contains("zk-fast"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// zk-rwlock with 70% reads: readers hold together (more than one at once was observed) and no
/// grant was ever made next to an incompatible holder. zk-fair in the same run has no shared
/// mode: it takes and records every "read" as an exclusive acquire, so it shows no readers at
/// all: the sharing is the recipe's.
#[test]
fn the_shared_lock_lets_readers_hold_together_and_never_a_writer_with_anyone() {
    let (out, out_dir) = common::run_quietly(
        "cli",
        "rwlock",
        "contention",
        &[
            "backends=zk-rwlock,zk-fair",
            "workload.clients=8",
            "workload.keys=1",
            "workload.read_fraction=0.7",
            "workload.hold=5ms",
            "duration=2s",
            "warmup=200ms",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let rw = result_of(&r, "zk-rwlock");
    let s = &rw["shared_lock"];
    assert_eq!(rw["safety"]["verdict"], "valid", "{rw}");
    assert_eq!(s["conflicts"], 0, "{s}");
    assert!(s["shared_grants"].as_u64().unwrap() > 0, "{s}");
    assert!(s["exclusive_grants"].as_u64().unwrap() > 0, "{s}");
    assert!(s["max_concurrent_readers"].as_u64().unwrap() >= 2, "{s}");
    // zk-fair has no shared mode: it took and recorded every "read" as an exclusive acquire.
    let fair = &result_of(&r, "zk-fair")["shared_lock"];
    assert_eq!(fair["conflicts"], 0, "{fair}");
    assert_eq!(fair["shared_grants"], 0, "{fair}");
    assert_eq!(fair["max_concurrent_readers"], 0, "{fair}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("shared lock zk-rwlock"));
}

/// The herd workload writes `fanout` for the etcd and Redis recipes too, with the servers'
/// own counts beside lockbench's: the naive and pub/sub recipes wake several waiters per
/// release, the revision-ordered one at most one (fewer when the next in line had not begun
/// watching yet and found the lock free itself, as happens more on a loaded machine: 0.82 at
/// a load average of 46).
#[test]
fn the_herd_run_reports_fanout_with_server_counts_for_etcd_and_redis() {
    let (out, out_dir) = common::run_quietly(
        "cli",
        "herd",
        "herd",
        &[
            "backends=etcd-lease,etcd-herd,redis-pubsub",
            "workload.clients=6",
            "duration=2s",
            "warmup=200ms",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let per_release = |backend: &str, field: &str| {
        result_of(&r, backend)["fanout"][field]
            .as_f64()
            .unwrap_or_else(|| panic!("{backend}: no fanout.{field}: {r}"))
    };
    let lease = per_release("etcd-lease", "notifications_per_release");
    assert!(lease > 0.0 && lease <= 1.1, "etcd-lease: {lease}");
    for naive in ["etcd-herd", "redis-pubsub"] {
        let n = per_release(naive, "notifications_per_release");
        assert!(n > 2.0, "{naive}: {n} notifications per release");
        assert!(per_release(naive, "server_notifications_per_release") >= n * 0.9);
        assert!(per_release(naive, "wasted_wakeups_per_release") > 1.0);
    }
}

#[test]
fn a_bad_scenario_field_is_named_before_anything_runs() {
    let dir = common::scratch("cli", "bad");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 4\nkeys = 1\nhold = \"fast\"\n",
    )
    .unwrap();
    let out = lockbench(&[
        "run",
        file.to_str().unwrap(),
        "--cluster",
        "external:/nonexistent",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hold") && err.contains("bad.toml"), "{err}");

    let out = lockbench(&["run", "quick", "--set", "workload.clients=0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workload.clients") && err.contains("at least 1"),
        "{err}"
    );

    let out = lockbench(&["run", "quick", "--set", "workload.clientz=3"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("clientz"));

    let out = lockbench(&["run", "no-such-scenario"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-scenario") && err.contains("quick"),
        "{err}"
    );

    let out = lockbench(&["run", "quick", "--set", "workload.read_fraction=1.5"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("workload.read_fraction"));

    // A fault the run would end before: chaos-quick partitions at 10 s.
    let out = lockbench(&["run", "chaos-quick", "--set", "duration=8s"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("faults[1]")
            && err.contains("partition at 10s for 4s")
            && err.contains("(8s)"),
        "{err}"
    );

    // The scale command checks its arguments before it touches any server.
    let out = lockbench(&["scale", "--steps", "500,100"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--steps"));
    let out = lockbench(&["scale", "--backends", "zk-fiar"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("zk-fiar") && err.contains("zk-fair"), "{err}");
}

#[test]
fn an_unreachable_server_fails_fast_naming_its_address() {
    let dir = common::scratch("cli", "unreachable");
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        "zookeeper = [\"127.0.0.1:1\"]\netcd = [\"http://127.0.0.1:2\"]\nredis = [\"127.0.0.1:3\"]\nredlock = [\"127.0.0.1:4\"]\n",
    )
    .unwrap();
    for (backend, address) in [
        ("redis-setnx", "127.0.0.1:3"),
        ("zk-fair", "127.0.0.1:1"),
        ("etcd-lease", "127.0.0.1:2"),
    ] {
        let started = Instant::now();
        let out_dir = dir.join(backend);
        let out = lockbench(&[
            "run",
            "quick",
            "--quiet",
            "--cluster",
            &format!("external:{}", file.display()),
            "--out",
            out_dir.to_str().unwrap(),
            "--set",
            &format!("backends={backend}"),
            "--set",
            common::NO_WARM_UP,
        ]);
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(2), "{backend}: {}", text(&out));
        assert!(took < Duration::from_secs(15), "{backend}: took {took:?}");
        let all = text(&out);
        assert!(
            all.contains(address),
            "{backend}: error does not name {address}: {all}"
        );
        let r = results(&out_dir);
        assert_eq!(result_of(&r, backend)["status"], "error");
    }
}

#[test]
fn scenarios_lists_the_built_ins() {
    let out = lockbench(&["scenarios"]);
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    for name in [
        "quick",
        "contention",
        "spread",
        "uncontended",
        "redis-throughput",
        "broken-recipe",
    ] {
        assert!(list.contains(name), "{list}");
    }
}

/// The root namespace's firewall and sysctls as they matter here: `iptables-save` without
/// counters and comment lines, and the bridge/forwarding sysctls.
fn host_network_state() -> String {
    let save = Command::new("iptables-save")
        .output()
        .expect("iptables-save");
    assert!(save.status.success(), "iptables-save failed");
    let rules: String = String::from_utf8_lossy(&save.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            // `:CHAIN POLICY [packets:bytes]` -> `:CHAIN POLICY`
            l.split_once(" [").map_or(l, |(head, _)| head).to_string() + "\n"
        })
        .collect();
    let sysctls: String = [
        "net/bridge/bridge-nf-call-iptables",
        "net/bridge/bridge-nf-call-ip6tables",
        "net/ipv4/ip_forward",
    ]
    .iter()
    .map(|s| {
        let v = std::fs::read_to_string(format!("/proc/sys/{s}")).unwrap_or_default();
        format!("{s} = {}", v.trim())
    })
    .collect::<Vec<_>>()
    .join("\n");
    format!("{rules}{sysctls}\n")
}

/// Lines that differ between two [`host_network_state`]s, ignoring what other programs may
/// change meanwhile on a shared machine (Docker's own chains and bridges, other lockbench
/// networks with another prefix, and the compose cluster's subnet, whose test adds and
/// removes its own rules while this one runs).
fn host_changes(before: &str, after: &str, prefix: &str) -> Vec<String> {
    let ours = |l: &str| {
        let others = ["DOCKER", "docker", "br-", "10.78.0."];
        !others.iter().any(|o| l.contains(o))
            && (!l.contains("lb-") || l.contains(&format!("lb-{prefix}-")))
    };
    let set = |s: &str| -> std::collections::BTreeSet<String> {
        s.lines().filter(|l| ours(l)).map(str::to_string).collect()
    };
    let (b, a) = (set(before), set(after));
    b.symmetric_difference(&a).cloned().collect()
}

/// Regression: on a Docker host (root `FORWARD` policy `DROP`, `br_netfilter`
/// loaded) `up` timed out after 90 s because bridged traffic between lockbench's hosts was
/// dropped. Now `up` works there, and `down` leaves the host's firewall and sysctls exactly as
/// they were, also after the `up` process was killed with SIGKILL halfway.
#[test]
fn up_works_on_a_docker_host_and_down_restores_the_host_firewall() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (network namespaces and iptables); run the suite as root"
    );
    let cluster = common::PrivateManaged::new("fw", "10.77.91.0/24");
    let tag = cluster.tag;
    let before = host_network_state();
    let up = cluster.run(&["up"]);
    assert!(up.status.success(), "{}", text(&up));
    let rules = String::from_utf8_lossy(
        &Command::new("iptables")
            .args(["-w", "-S", "FORWARD"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    let filtered = std::fs::read_to_string("/proc/sys/net/bridge/bridge-nf-call-iptables")
        .is_ok_and(|v| v.trim() == "1");
    assert_eq!(
        rules.contains(&format!("lb-{tag}-br0")),
        filtered,
        "an ACCEPT rule for the bridge exactly when bridged traffic is filtered:\n{rules}"
    );
    let down = cluster.run(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    let changes = host_changes(&before, &host_network_state(), tag);
    assert!(
        changes.is_empty(),
        "up + down changed the host: {changes:#?}"
    );

    // SIGKILL while `up` runs (after the network exists), then the next `down` cleans up.
    let mut child = cluster
        .command(&["up"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::path::Path::new(&format!("/run/netns/lb-{tag}-zk1")).exists() {
        assert!(Instant::now() < deadline, "up never created its hosts");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let down = cluster.run(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    let changes = host_changes(&before, &host_network_state(), tag);
    assert!(
        changes.is_empty(),
        "kill -9 + down changed the host: {changes:#?}"
    );
}

/// Where traffic between lockbench's hosts is dropped anyway (here: a raw-table rule on its
/// bridge that no FORWARD rule can undo), `up` fails within seconds naming the bridge and
/// the cause, instead of waiting 90 s for health.
#[test]
fn up_fails_fast_naming_the_cause_when_the_bridge_drops_traffic() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (network namespaces and iptables); run the suite as root"
    );
    let cluster = common::PrivateManaged::new("fx", "10.77.92.0/24");
    let bridge = format!("lb-{}-br0", cluster.tag);
    let rule = ["PREROUTING", "-i", bridge.as_str(), "-j", "DROP"];
    let iptables = |op: &str| {
        Command::new("iptables")
            .args(["-w", "-t", "raw", op])
            .args(rule)
            .status()
            .unwrap()
            .success()
    };
    assert!(iptables("-I"), "cannot add the raw DROP rule");
    let start = Instant::now();
    let up = cluster.run(&["up"]);
    let took = start.elapsed();
    assert!(iptables("-D"), "cannot remove the raw DROP rule");
    let down = cluster.run(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    assert!(!up.status.success(), "up must fail: {}", text(&up));
    let err = String::from_utf8_lossy(&up.stderr);
    assert!(
        err.contains(&bridge) && err.contains("cannot reach each other"),
        "the error names the bridge and the cause: {err}"
    );
    // A third of the 90 s health wait: at a load average of 23 the namespaces and servers
    // before the probe took 15.3 s on their own.
    assert!(took < Duration::from_secs(30), "up took {took:?} to fail");
}

/// Regression: SIGTERM (what `timeout`, CI and Kubernetes send) killed a run
/// at once and left the cluster it had started (14 servers, 17 namespaces). Now it is handled
/// as Ctrl-C: the run stops, the partial results are written, the cluster the run started is
/// stopped and its network removed, and the exit code is 130.
#[test]
fn sigterm_stops_the_run_cleanly_and_keeps_the_partial_results() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (network namespaces and iptables); run the suite as root"
    );
    let cluster = common::PrivateManaged::new("st", "10.77.94.0/24");
    let before = host_network_state();
    let out_dir = cluster.state.join("run");
    let child = cluster
        .command(&[
            "run",
            "quick",
            "--quiet",
            "--set",
            "backends=redis-setnx",
            "--set",
            "duration=60s",
            "--set",
            common::NO_WARM_UP,
            "--out",
        ])
        .arg(&out_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the backend's history is being written: the run window is open.
    let deadline = Instant::now() + Duration::from_secs(120);
    let history = out_dir.join("history.jsonl.zst");
    while std::fs::metadata(&history).map_or(0, |m| m.len()) == 0 {
        assert!(
            Instant::now() < deadline,
            "the run never started writing its history"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?} to stop",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted (SIGTERM)"),
        "{}",
        text(&out)
    );
    let r = results(&out_dir);
    assert_eq!(r["complete"], false, "{r}");
    let netns: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("lb-st-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(netns.is_empty(), "namespaces left: {netns:?}");
    let changes = host_changes(&before, &host_network_state(), "st");
    assert!(changes.is_empty(), "the run changed the host: {changes:#?}");
}

/// The history is written as zstd frames while the run goes, closed at least
/// every second, so a run killed outright (`kill -9`: no handler, no flush) keeps every frame
/// written before the kill: seconds of ops, readable, only the last second or so lost.
#[test]
fn a_run_killed_with_sigkill_keeps_its_history_up_to_about_the_last_second() {
    let dir = common::scratch("cli", "sigkill");
    let cluster = common::external_cluster(&dir);
    let out_dir = dir.join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "quick", "--quiet", "--cluster", &cluster])
        .args(["--set", "backends=redis-setnx", "--set", "duration=60s"])
        .args(["--set", "warmup=0s", "--set", common::NO_WARM_UP, "--out"])
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let history = out_dir.join("history.jsonl.zst");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&history).map_or(0, |m| m.len()) == 0 {
        assert!(Instant::now() < deadline, "the run never wrote its history");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The first frame is on disk; let four more seconds of frames follow, then kill.
    std::thread::sleep(Duration::from_secs(4));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let text = common::history_text(&out_dir);
    let times: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["t"].as_u64())
        .collect();
    let lines = text.lines().count();
    assert!(
        times.len() + 1 >= lines,
        "only a torn last line may be unreadable"
    );
    assert!(times.len() > 1000, "{} ops kept", times.len());
    let span_s = (times.iter().max().unwrap() - times.iter().min().unwrap()) as f64 / 1e9;
    assert!(
        span_s >= 3.0,
        "the history kept only {span_s:.2} s of the ~5 s run before the kill"
    );
    // `lockbench analyse` judges what was kept, up to the horizon, and says it was cut off:
    // never "valid" for a history that lost its tail.
    let analysed = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("analyse")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&analysed.stdout);
    assert_eq!(analysed.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("redis-setnx    unknown"), "{stdout}");
    assert!(stdout.contains("history cut off at"), "{stdout}");
    assert!(stdout.contains("mutex          valid"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lockbench analyse` on a run that finished judges its history as the run did.
#[test]
fn analyse_gives_a_finished_run_the_verdicts_the_run_gave() {
    let dir = common::scratch("cli", "analyse");
    let cluster = common::external_cluster(&dir);
    let out_dir = dir.join("run");
    let run = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "broken-recipe", "--quiet", "--cluster", &cluster])
        .args(["--set", "duration=3s", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stderr)));
    let verdict_of = |b: &str| {
        results["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["backend"] == b)
            .map(|r| r["safety"]["verdict"].as_str().unwrap().to_string())
            .unwrap()
    };
    let analysed = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("analyse")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&analysed.stdout);
    for b in ["redis-setnx", "redis-broken-nonx", "zk-broken-rwlock"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{b} ")))
            .unwrap_or_else(|| panic!("no line for {b}: {stdout}"));
        assert!(
            line.contains(&verdict_of(b)),
            "{b}: {line} / {}",
            verdict_of(b)
        );
    }
    assert_eq!(verdict_of("redis-broken-nonx"), "invalid", "{stdout}");
    assert_eq!(analysed.status.code(), Some(1), "a violation: {stdout}");
    assert!(
        !stdout.contains("horizon"),
        "a finished run is not cut off: {stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
