//! The file formats, pinned: every built-in scenario's `scenario.toml` (every default filled
//! in) and its JSON job line, and the endpoints file, byte for byte. The System boundary
//! moved the knobs and the endpoint lists out of core's named fields into tables keyed by
//! system; these goldens are the proof that nothing a user or a worker reads changed.
//! `UPDATE_EXPECT=1 cargo test -p lockbench-registry --test formats` rewrites them.

use lockbench_core::{Endpoints, Scenario};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `got` with the golden file `name`, or rewrites it under `UPDATE_EXPECT`.
fn golden(name: &str, got: &str, stale: &mut Vec<String>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&file, got).unwrap();
    } else if std::fs::read_to_string(&file).unwrap_or_default() != got {
        stale.push(name.to_string());
    }
}

fn load(source: &str, text: &str, overrides: &[String]) -> Result<Scenario, String> {
    lockbench_registry::load_scenario(source, text, overrides)
}

#[test]
fn every_built_in_scenario_saves_and_crosses_to_workers_as_before() {
    let mut stale = Vec::new();
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    // The pinned scenarios are those with a golden (a scenario added later is pinned by
    // running with UPDATE_EXPECT once); under UPDATE_EXPECT, every built-in one.
    let dir = if update {
        root().join("scenarios")
    } else {
        golden_dir()
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.extension().is_some_and(|e| e == "toml") && stem != "endpoints" {
            names.push(stem);
        }
    }
    names.sort();
    assert!(names.len() >= 15, "{names:?}");
    for stem in names {
        let path = root().join("scenarios").join(format!("{stem}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let s = load(&stem, &text, &[]).unwrap();
        let saved = s.to_toml();
        golden(&format!("{stem}.toml"), &saved, &mut stale);
        let job = serde_json::to_string(&s).unwrap();
        golden(&format!("{stem}.json"), &format!("{job}\n"), &mut stale);
        // Both forms read back to the same scenario.
        assert_eq!(load("again", &saved, &[]).unwrap(), s, "{stem}");
        assert_eq!(serde_json::from_str::<Scenario>(&job).unwrap(), s, "{stem}");
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from tests/golden; if the change is meant, run \
         `UPDATE_EXPECT=1 cargo test -p lockbench-registry --test formats`"
    );
}

#[test]
fn the_endpoints_file_reads_and_writes_as_before() {
    let text = std::fs::read_to_string(root().join("compose/endpoints.toml")).unwrap();
    let e = Endpoints::from_toml(&text).unwrap();
    let mut stale = Vec::new();
    golden("endpoints.toml", &e.to_toml(), &mut stale);
    let json = serde_json::to_string(&e).unwrap();
    golden("endpoints.json", &format!("{json}\n"), &mut stale);
    assert!(stale.is_empty(), "{stale:?} differ from tests/golden");
    // Every key line of the committed file is a line of what lockbench writes.
    let written = e.to_toml();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(written.lines().any(|w| w == line), "{line}\n{written}");
    }
    assert_eq!(serde_json::from_str::<Endpoints>(&json).unwrap(), e);
    assert_eq!(Endpoints::from_toml(&written).unwrap(), e);
}

/// A misspelled list name in an external cluster file is an error naming it (a silently empty
/// list would turn into "this cluster has no ZooKeeper" far from the typo).
#[test]
fn a_misspelled_endpoints_key_is_named() {
    let e = Endpoints::from_toml("zookeper = [\"10.0.0.1:2181\"]\n").unwrap();
    let err = lockbench_registry::check_endpoints(&e).unwrap_err();
    assert!(err.contains("zookeper"), "{err}");
}

/// Knob errors name the knob's dotted path, as they did when core held the knobs.
#[test]
fn knob_errors_name_the_knob() {
    let base = "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 2\nkeys = 1\n";
    for (set, want) in [
        (
            "zookeeper.session_timeout=100ms",
            "zookeeper.session_timeout",
        ),
        ("zookeeper.root=relative", "zookeeper.root"),
        ("etcd.lease_ttl=10ms", "etcd.lease_ttl"),
        ("redis.ttl=0s", "redis.ttl"),
        ("redis.response_timeout=0s", "redis.response_timeout"),
        ("redlock.node_timeout=20s", "redlock.node_timeout"),
        ("redlock.drift_factor=0.7", "redlock.drift_factor"),
        ("zookeeper.sesion_timeout=4s", "sesion_timeout"),
    ] {
        let err = load("t.toml", base, &[set.to_string()]).unwrap_err();
        assert!(err.contains(want) && err.contains("t.toml"), "{set}: {err}");
    }
    let err = load("t.toml", &format!("zookeper = 3\n{base}"), &[]).unwrap_err();
    assert!(err.contains("zookeper"), "{err}");
    let err = load("t.toml", &format!("{base}[zookeper]\nroot = \"/x\"\n"), &[]).unwrap_err();
    assert!(err.contains("zookeper"), "{err}");
}
