//! The `redlock-minority` scenario on the managed cluster: the holder's client host loses three
//! of the five Redlock servers (iptables in the hosts' namespaces, checked from inside the
//! client host), the other clients keep every link. Redlock's renewal then reaches two servers,
//! fewer than its quorum, and ends the hold before the majority lets the key expire: safe.
//! `redlock-broken-renew` counts the renewal kept on one server and goes on holding while a
//! waiter holds the lock on the majority: the mutex checker must catch it, and the run's
//! expectations say both.
//!
//! Its workers run on client hosts of the shared cluster (runs with faults hold the cluster's
//! fault-run lock) on lock keys of their own. Needs root and the netns topology, as CI has; it
//! FAILS saying why otherwise, unless `LOCKBENCH_ALLOW_NO_ROOT=1`.

use crate::common::{self, result_of, results, text};
use crate::partition::netns_or_skip;
use serde_json::Value;

/// The one applied cut of `backend`'s run.
fn cut_window<'a>(r: &'a Value, backend: &str) -> &'a Value {
    let x = result_of(r, backend);
    let windows = x["fault_windows"].as_array().expect("fault windows");
    let cuts: Vec<&Value> = windows
        .iter()
        .filter(|w| w["fault"] == "partition")
        .collect();
    assert_eq!(cuts.len(), 1, "{backend}: {windows:?}");
    cuts[0]
}

#[test]
fn a_holder_cut_to_a_minority_ends_its_hold_unless_its_renewal_is_broken() {
    if netns_or_skip("it cuts one client host from Redlock servers").is_none() {
        return;
    }
    let run = common::scratch("redlock-minority", "both").join("run");
    // The managed cluster itself (an external one's servers take no firewall rules).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "redlock-minority", "--set"])
        .arg("redlock.prefix=lockbench-minority-test:")
        .arg("--out")
        .arg(&run)
        .output()
        .expect("run lockbench");
    let r = results(&run);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("EXPECTATION MET: redlock safe: valid")
            && stdout.contains("EXPECTATION MET: redlock-broken-renew violated: invalid:"),
        "{all}"
    );

    for backend in ["redlock", "redlock-broken-renew"] {
        let cut = cut_window(&r, backend);
        assert_eq!(cut["applied"], true, "{backend}: {cut}");
        let targets: Vec<&str> = cut["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let (clients, servers): (Vec<&str>, Vec<&str>) =
            targets.iter().partition(|t| t.starts_with("client"));
        assert_eq!(clients.len(), 1, "{backend}: one holder's host: {cut}");
        assert_eq!(servers.len(), 3, "{backend}: a majority of five: {cut}");
        let note = cut["note"].as_str().unwrap();
        assert!(
            note.contains(&format!("checked: {} reach(es) none", clients[0])),
            "{backend}: the cut was not seen from inside the client host: {note}"
        );
        assert!(
            result_of(&r, backend)["acquisitions"].as_u64() >= Some(2),
            "{backend}: the lock never moved: {}",
            result_of(&r, backend)
        );
    }

    let good = &result_of(&r, "redlock")["safety"];
    assert_eq!(good["verdict"], "valid", "{good}");
    let broken = &result_of(&r, "redlock-broken-renew")["safety"];
    assert_eq!(broken["verdict"], "invalid", "{broken}");
    assert!(broken["mutex_violations"].as_u64() >= Some(1), "{broken}");
    // The overlap is the cut's: the window says so.
    let cut = cut_window(&r, "redlock-broken-renew");
    assert!(
        cut["violations"]["mutex"].as_u64() >= Some(1),
        "the broken renewal's overlap is not in the cut's window: {cut}"
    );
    let _ = std::fs::remove_dir_all(run.parent().unwrap());
}
