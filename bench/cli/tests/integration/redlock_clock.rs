//! The `redlock-clock` scenario on the managed cluster: two clients, each on a client host cut
//! from a different two of the five Redlock servers, take turns through the one server both
//! reach; that server's wall clock then jumps 30 s forward for real (the clock shim the
//! managed servers run with). The holder's key expires there at once, the other client wins
//! a majority of its own, and the mutex checker must find the overlap, in the clock's window.
//!
//! Needs root and the netns topology, as CI has; it FAILS saying why otherwise, unless
//! `LOCKBENCH_ALLOW_NO_ROOT=1`.

use crate::common::{self, result_of, results, text};
use crate::partition::netns_or_skip;
use serde_json::Value;

#[test]
fn a_jump_of_one_servers_clock_lets_two_clients_hold_a_redlock() {
    if netns_or_skip("it cuts client hosts from Redlock servers").is_none() {
        return;
    }
    let run = common::scratch("redlock-clock", "jump").join("run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "redlock-clock", "--set"])
        .arg("redlock.prefix=lockbench-clock-test:")
        .arg("--out")
        .arg(&run)
        .output()
        .expect("run lockbench");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("EXPECTATION MET: redlock violated: invalid:"),
        "{all}"
    );
    let r = results(&run);
    let x = result_of(&r, "redlock");
    let windows = x["fault_windows"].as_array().expect("fault windows");
    let jump = windows
        .iter()
        .find(|w| w["fault"] == "clock")
        .unwrap_or_else(|| panic!("no clock window: {windows:?}"));
    assert_eq!(jump["applied"], true, "{jump}");
    assert_eq!(jump["targets"], serde_json::json!(["redlock3"]), "{jump}");
    assert!(
        jump["note"]
            .as_str()
            .is_some_and(|n| n.contains("redlock3: its first shifted read after")),
        "the shift was not seen inside the server: {jump}"
    );
    assert!(
        jump["violations"]["mutex"].as_u64() >= Some(1),
        "the overlap is not in the clock's window: {jump}"
    );
    let cuts = windows
        .iter()
        .filter(|w| w["fault"] == "partition" && w["applied"] == true)
        .count();
    assert_eq!(cuts, 2, "{windows:?}");
    assert!(x["acquisitions"].as_u64() >= Some(2), "{x}");
    let safety: &Value = &x["safety"];
    assert_eq!(safety["verdict"], "invalid", "{safety}");
    let _ = std::fs::remove_dir_all(run.parent().unwrap());
}
