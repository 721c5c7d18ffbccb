//! PostgreSQL failover by promotion, end to end: `lockbench run pg-failover`
//! kills the primary while a client holds an advisory lock and promotes the replica. Advisory
//! locks are not replicated, so the promoted replica grants the same lock at once while the old
//! holder still believes it holds it: the run must show that as the scenario expects (a `mutex`
//! violation, exit 0), the fault applied with the time the promotion took, and the server-side
//! view must name a lock lost while held.
//!
//! The fault kills and promotes the PostgreSQL pair (its heal rejoins the old primary as the
//! new one's replica), so the run has a managed cluster of its own: its own state directory,
//! namespaces and subnet, where the run starts the pair and stops it at its end. The shared
//! cluster's PostgreSQL tests are not disturbed, and this test runs beside them.

use crate::common;

use crate::common::{result_of, results, text};

#[test]
fn promoting_the_replica_loses_the_held_advisory_lock_and_the_run_shows_it() {
    let dir = common::scratch("pg-failover", "promote");
    let out_dir = dir.join("run");
    let cluster = common::PrivateManaged::new("pf", "10.88.3.0/24");
    let out = cluster
        .command(&["run", "pg-failover", "--quiet", "--out"])
        .arg(&out_dir)
        .args(["--set", "backends=pg-advisory"])
        .output()
        .expect("run lockbench");
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let pg = result_of(&r, "pg-advisory");
    assert_eq!(pg["status"], "ok", "{pg}");
    assert_eq!(pg["safety"]["verdict"], "invalid", "{pg}");
    let kinds = pg["safety"]["violation_kinds"].to_string();
    assert!(kinds.contains("mutex"), "{kinds}");
    let windows = pg["fault_windows"].as_array().expect("fault windows");
    let promote = windows
        .iter()
        .find(|w| w["fault"] == "promote")
        .unwrap_or_else(|| panic!("no promote window: {pg}"));
    assert_eq!(promote["applied"], true, "{promote}");
    let note = promote["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("promot"),
        "the note says nothing of the promotion: {note}"
    );
    let truth = &pg["server_truth"]["figures"];
    assert!(
        truth["lost_while_held"].as_u64().unwrap_or(0) >= 1,
        "the servers never took a held lock away: {truth}"
    );
    let expectations = r["expectations"].as_array().expect("expectations");
    assert!(!expectations.is_empty());
    for e in expectations {
        assert_eq!(e["outcome"], "met", "{e}");
    }
}
