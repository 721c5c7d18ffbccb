//! The servers' request figure is never printed across a restart of their counters: a
//! ZooKeeper follower cut off from its peers makes its statistics anew when it
//! rejoins (`zk_packets_received` back near zero), so the difference of the counters read
//! before and after a run is no count. The run's `requests` must say the servers' figure is
//! unknown and name the member, not print a number.
//!
//! The test brings up its own three-member ensemble (a private managed cluster in its own
//! namespaces and subnet), because partitioning a member of the shared one would disturb the
//! suite's other ZooKeeper tests; the run reaches it with `--cluster external:FILE`, and the
//! test cuts the follower off itself, with the chaos crate's server nemesis, while the run
//! goes on. It checks on its own that the fault took: the follower's `zk_uptime` after the run
//! is shorter than the time since it was first read. Torn down at the end, also when the test
//! fails. Needs root (network namespaces), as CI has.

use crate::common;

use crate::common::{PrivateCluster, result_of, results, text};
use lockbench_chaos::{Nemesis, ServerNemesis};
use lockbench_core::{Fault, PartitionSpec, RunClock, Targets};
use lockbench_zookeeper::system::ZOOKEEPER;
use rand::SeedableRng;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A member's `mntr` answer (empty if it does not answer).
fn mntr(address: &str) -> String {
    let mut answer = String::new();
    if let Ok(mut s) = TcpStream::connect(address) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"mntr");
        let _ = s.read_to_string(&mut answer);
    }
    answer
}

fn mntr_value(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('\t')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

/// Two clients on one key; ZooKeeper sessions that outlive the partition, so the clients on the
/// cut-off member move to another with their locks (the run stays safe).
const SCENARIO: &str = r#"
name = "follower-rejoin"
seed = 1
backends = ["zk-fair"]
duration = "10s"
warmup = "0s"
[workload]
clients = 2
keys = 1
hold = "5ms"
think = "5ms"
[zookeeper]
session_timeout = "15s"
"#;

/// How long the follower is cut off: above the ensemble's `syncLimit * tickTime` (2.5 s), after
/// which it gives up on its leader and rejoins anew once healed.
const CUT_OFF: Duration = Duration::from_secs(4);

#[test]
fn a_follower_cut_off_from_its_peers_makes_the_servers_request_figure_unknown() {
    let dir = common::scratch("counters", "rejoin");
    let zk = PrivateCluster::up("lzc", "10.84.1.0/24", &dir, &[ZOOKEEPER]);
    let members = zk.endpoints.get("zookeeper");
    let i = members
        .iter()
        .position(|m| mntr(m).contains("zk_server_state\tfollower"))
        .unwrap_or_else(|| panic!("no follower among {members:?}"));
    let (name, address) = (format!("zk{}", i + 1), members[i].clone());
    let first_read = Instant::now();
    let packets_before = mntr_value(&mntr(&address), "zk_packets_received").unwrap();

    let scenario = dir.join("scenario.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out_dir = dir.join("run");
    let child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--quiet",
            "--cluster",
            &zk.arg,
        ])
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run has started once its history has a frame of ops (closed every second).
    let history = out_dir.join("history.jsonl.zst");
    let t0 = Instant::now();
    while std::fs::metadata(&history).map_or(true, |m| m.len() == 0) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut nemesis = ServerNemesis::new(
        zk.cluster.clone(),
        ZOOKEEPER,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
    );
    let clock = RunClock::start();
    let cut = zk.rt.block_on(nemesis.apply(
        &Fault::Partition {
            split: PartitionSpec::Isolate(Targets::Nodes(vec![name.clone()])),
        },
        &clock,
    ));
    std::thread::sleep(CUT_OFF);
    let healed = zk.rt.block_on(nemesis.apply(&Fault::Heal, &clock));
    assert!(
        cut.iter().chain(&healed).all(|e| e.applied),
        "{cut:?} {healed:?}"
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));

    // The fault took: the follower's statistics started again during the run.
    let after = mntr(&address);
    let uptime_ms = mntr_value(&after, "zk_uptime")
        .unwrap_or_else(|| panic!("{name} not serving after the run: {after:?}"));
    let packets_after = mntr_value(&after, "zk_packets_received").unwrap();
    assert!(
        Duration::from_millis(uptime_ms) < first_read.elapsed(),
        "cutting {name} off for {CUT_OFF:?} did not restart its counters: uptime {uptime_ms} \
         ms, {:?} after it was first read (packets received {packets_before} -> \
         {packets_after})",
        first_read.elapsed()
    );
    eprintln!(
        "{name}: zk_packets_received {packets_before} before the run, {packets_after} after; \
         zk_uptime {uptime_ms} ms"
    );

    let r = results(&out_dir);
    let q = &result_of(&r, "zk-fair")["requests"];
    let why = q["server_unknown"]
        .as_str()
        .unwrap_or_else(|| panic!("the servers' figure was printed across {name}'s restart: {q}"));
    assert!(
        why.contains(&format!("{name} ({address})")) && why.contains("restarted"),
        "{why}"
    );
    assert!(q["server_per_acquisition"].is_null(), "{q}");
    assert!(q["server_counted"].is_null(), "{q}");
    assert!(q["client_per_acquisition"].as_f64().unwrap() >= 1.0, "{q}");
    // The table says so too: `?` for the figure and a line with the reason.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("req/acq zk-fair: the servers' figure is unknown") && stdout.contains(why),
        "{stdout}"
    );
    // And the report: `?` with the reason in the summary's notes.
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    // As the page's markup escapes text (maud: `&`, `<`, `>`, `"`; an apostrophe stays).
    let escaped = why
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(
        html.contains("req/acq figure is unknown (?) for zk-fair: ") && html.contains(&escaped),
        "report.html does not give the reason {why:?}"
    );
    drop(zk);
    let _ = std::fs::remove_dir_all(&dir);
}
