//! The failover workload end to end against the real ZooKeeper ensemble: killing the election
//! leader's candidate *process* (SIGKILL of a `lockbench worker`) produces a new leader, no
//! sooner than ZooKeeper can notice the dead session and no later than its timeout plus a
//! generous margin for a loaded machine.
//!
//! Runs use `--cluster external:FILE` with the managed cluster's endpoints, so the test never
//! starts or stops servers other tests use (candidates then run in the root namespace).

use crate::common;

use crate::common::{result_of, results, text};

/// The session timeout the run asks for.
const SESSION_TIMEOUT_MS: f64 = 2000.0;

#[test]
fn killing_the_zookeeper_leader_process_elects_a_new_leader_within_the_session_timeout() {
    let dir = common::scratch("failover", "zk-kill");
    let (out, out_dir) = common::run_scenario(
        &dir,
        "failover",
        &[
            "elections=zk-election",
            "failover.removals=kill",
            "failover.rounds=1",
            "workload.clients=3",
            "zookeeper.session_timeout=2s",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = results(&out_dir);
    let zk = result_of(&r, "zk-election");
    assert_eq!(zk["status"], "ok", "{zk}");
    assert_eq!(zk["workload"], "failover", "{zk}");
    let round = &zk["failover"]["rounds"][0];
    assert_eq!(round["removal"], "kill", "{zk}");
    let old = round["old_leader"]["candidate"]
        .as_u64()
        .expect("old leader");
    let new = round["new_leader"]["candidate"]
        .as_u64()
        .expect("a new leader");
    assert_ne!(old, new, "the killed candidate cannot lead again: {round}");
    assert!(
        round["new_leader"]["epoch"].as_u64() > round["old_leader"]["epoch"].as_u64(),
        "{round}"
    );
    let t = round["time_to_new_leader_ms"]
        .as_f64()
        .expect("time to new leader");
    // ZooKeeper deletes the dead leader's node only when its session expires: the session
    // timeout after the last heartbeat, which was at most a third of it before the kill.
    // Anything near zero would mean the node went with a goodbye, not with the crash.
    assert!(
        t > SESSION_TIMEOUT_MS / 4.0,
        "new leader after {t} ms: too soon for a session expiry ({round})"
    );
    assert!(
        t < SESSION_TIMEOUT_MS + 5000.0,
        "new leader after {t} ms: more than the session timeout plus 5 s ({round})"
    );
    let all = round["time_to_all_observed_ms"]
        .as_f64()
        .expect("every live candidate observed the new leader");
    assert!(all >= t, "{round}");
    assert_eq!(
        zk["failover"]["split_brain"].as_array().map(Vec::len),
        Some(0),
        "{zk}"
    );
    // The kill is in the history as a fault event: a real SIGKILL of the leader's process.
    let history = common::history_text(&out_dir);
    assert!(
        history
            .lines()
            .any(|l| l.contains("\"fault\":\"kill\"") && l.contains("SIGKILL pid")),
        "no kill event in the history"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
