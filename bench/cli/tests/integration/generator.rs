//! lockbench's own CPU share must be lockbench's. When `run` starts the
//! managed cluster itself, every server is lockbench's descendant, and the resource sampler
//! counted them all as lockbench: `sweep capacity` from a stopped cluster reported "lockbench
//! CPU 165-182%" and generator-bound, while `/usr/bin/time` measured about 11% of a core.
//!
//! The test gives the run a private, stopped cluster (its own state directory, namespace prefix
//! and subnet), so the run starts it, and checks that the run started the servers of the one
//! system its backend uses and no other, and that no server process is counted as lockbench.

use crate::common;

use crate::common::{result_of, results, text};
use serde_json::Value;

const TAG: &str = "gc"; // the prefix `lb-gc-`: at most 7 characters
const SUBNET: &str = "10.77.93.0/24";

fn pids(p: &Value) -> Vec<u64> {
    p["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn servers_a_run_started_are_not_counted_as_lockbench() {
    let dir = common::scratch("generator", "cpu");
    let state = common::PrivateManaged::new(TAG, SUBNET);
    let down = state.run(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    let out_dir = dir.join("run");
    let out = state.run(&[
        "run",
        "quick",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
        "--set",
        "backends=redis-setnx",
        "--set",
        "duration=3s",
        "--set",
        common::NO_WARM_UP,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("stopping the managed cluster this run started"),
        "the run must have started the cluster itself: {all}"
    );
    // It started the servers of the system its backend uses, and no other.
    let started = |name: &str| state.state.join("cluster").join(name).exists();
    assert!(started("redis") && started("redlock5"), "{all}");
    assert!(
        !started("zk1") && !started("etcd1") && !started("pg1"),
        "a Redis run started other systems' servers: {all}"
    );
    let r = results(&out_dir);
    let res = result_of(&r, "redis-setnx");
    let procs = res["resources"]["processes"].as_array().unwrap();
    let generator = procs
        .iter()
        .find(|p| p["role"] == "generator")
        .unwrap_or_else(|| panic!("no generator entry: {res}"));
    let servers: Vec<&Value> = procs.iter().filter(|p| p["role"] == "server").collect();
    assert!(!servers.is_empty(), "the redis server is sampled: {res}");
    let ours = pids(generator);
    for s in &servers {
        for pid in pids(s) {
            assert!(
                !ours.contains(&pid),
                "server {} (pid {pid}) counted as lockbench: {generator}",
                s["name"]
            );
        }
    }
    drop(state);
    let _ = std::fs::remove_dir_all(&dir);
}
