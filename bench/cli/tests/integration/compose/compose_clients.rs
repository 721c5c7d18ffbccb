//! Clients as containers, on the running compose cluster: a client container
//! is a host of its own for the chaos site (isolated, it reaches no server; paused, Docker
//! shows it paused), and the fencing scenario runs its holder in one, pauses it and sees its
//! stale write fenced (or, for Redlock, which has no token, accepted: the same verdicts as in
//! managed mode).

use crate::common;
use lockbench_chaos::Nemesis;
use lockbench_core::{Fault, PartitionSpec, RunClock, Targets};
use lockbench_redis::system::REDLOCK;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn client1() -> Targets {
    Targets::Nodes(vec!["client1".into()])
}

/// The client containers that exist now (their names).
fn client_containers() -> Vec<String> {
    let filter = format!("label={}", lockbench_compose::clients::LABEL);
    super::docker(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A worker container `client1` that waits for its job (it reads stdin), as a run starts it
/// (holding the compose lock, as a run does); isolated and paused through the compose
/// nemesis, each effect checked from inside it and in Docker's state.
pub async fn a_client_container_is_a_host_of_its_own() {
    let lock = lockbench_compose::clients::lock_file();
    let _lock = lockbench_cluster::lock_path(&lock).await.unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_lockbench"));
    lockbench_compose::clients::remove(1).await;
    let mut cmd = lockbench_compose::clients::command(1, exe);
    cmd.arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    let mut worker = cmd.spawn().expect("docker run a client container");
    let pid = lockbench_compose::clients::host_pid(1).await.unwrap();
    assert!(pid > 1, "client container pid {pid}");
    let clock = RunClock::start();
    let mut n = lockbench_compose::nemesis(REDLOCK, ChaCha8Rng::seed_from_u64(1));
    assert!(
        super::compose_faults::reaches("client1", "redlock1"),
        "a client container does not reach a server before any fault"
    );

    let split = PartitionSpec::Isolate(client1());
    let ev = n.apply(&Fault::Partition { split }, &clock).await;
    assert!(ev.len() == 1 && ev[0].applied, "{ev:?}");
    assert_eq!(ev[0].targets, vec!["client1".to_string()]);
    for s in ["redlock1", "redlock2", "redlock3", "redlock4", "redlock5"] {
        assert!(
            !super::compose_faults::reaches("client1", s),
            "isolated client1 still reaches {s}"
        );
    }
    assert!(
        super::compose_faults::reaches("redlock1", "redlock2"),
        "isolating a client cut servers apart"
    );
    let healed = n.apply(&Fault::Heal, &clock).await;
    assert!(healed.iter().all(|e| e.applied), "{healed:?}");
    assert!(
        super::compose_faults::reaches("client1", "redlock1"),
        "client1 is still cut off after heal"
    );

    let ev = n.apply(&Fault::Pause { targets: client1() }, &clock).await;
    assert!(ev.len() == 1 && ev[0].applied, "{ev:?}");
    assert_eq!(super::compose_faults::state("client1"), "true true");
    let ev = n.apply(&Fault::Resume { targets: client1() }, &clock).await;
    assert!(ev.len() == 1 && ev[0].applied, "{ev:?}");
    assert_eq!(super::compose_faults::state("client1"), "true false");

    // Closing its stdin (the coordinator gone) ends the worker, and `--rm` the container.
    drop(worker.stdin.take());
    let status = worker.wait().unwrap();
    assert!(status.success() || status.code().is_some(), "{status:?}");
    for _ in 0..100 {
        if client_containers().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(client_containers(), Vec::<String>::new(), "container left");
}

/// `lockbench run fencing --cluster compose`: the holder is worker `client1` in container
/// `lockbench-client1` (seen running during the run), it is paused after its grant, its
/// stale write is rejected for zk-fair and accepted for Redlock (no token), as in managed
/// mode; no client container is left afterwards.
pub fn fencing_holder_runs_in_a_container() {
    let dir = common::scratch("compose", "fencing");
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                seen.lock().unwrap().extend(client_containers());
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["run", "fencing", "--quiet", "--cluster", "compose"])
        .args(["--set", "backends=zk-fair,redlock", "--set", "duration=7s"])
        .args(["--set", "zookeeper.session_timeout=1s", "--out"])
        .arg(dir.join("run"))
        .output()
        .unwrap();
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert!(out.status.success(), "{}", common::text(&out));
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains("lockbench-client1"),
        "the holder did not run in container lockbench-client1 (seen: {seen:?}): {}",
        common::text(&out)
    );
    let r = common::results(&dir.join("run"));
    assert_eq!(r["cluster"], "compose");
    for backend in ["zk-fair", "redlock"] {
        let res = common::result_of(&r, backend);
        assert_eq!(res["status"], "ok", "{backend}: {res}");
        assert!(
            res["fencing"]["holder_pauses"].as_u64().unwrap() >= 1,
            "{backend}: the holder was never paused: {res}"
        );
        let s = &res["safety"];
        eprintln!("compose test: fencing {backend}: {s}");
        if backend == "redlock" {
            // No token: the resumed holder's write after its lock expired is accepted.
            assert!(
                s["writes_after_lock_lost_accepted"].as_u64().unwrap() >= 1,
                "redlock: {s}"
            );
        } else {
            assert!(
                s["stale_writes_rejected"].as_u64().unwrap() >= 1,
                "{backend}: {s}"
            );
            assert_eq!(s["stale_writes_accepted"], 0, "{backend}: {s}");
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    for met in ["zk-fair fenced: ", "redlock damaged: "] {
        assert!(
            stdout.contains(&format!("EXPECTATION MET: {met}")),
            "{}",
            common::text(&out)
        );
    }
    assert_eq!(client_containers(), Vec::<String>::new(), "containers left");
    let _ = std::fs::remove_dir_all(&dir);
}
