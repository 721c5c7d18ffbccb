//! The `disk` fault against real servers in a private cluster: etcd's three members moved
//! onto slow-disk pass-throughs, their writes answered late (a put takes the delay, and etcd's
//! own log says its fdatasync was slow), the leader's disk frozen (its followers elect another
//! leader), everything put right at heal, and the pass-throughs removed with the servers
//! healthy again on their own directories.

use crate::faults::{nemesis_of, test_cluster};
use lockbench_chaos::Nemesis;
use lockbench_core::{Fault, FaultKind, FaultPhase, RunClock, Targets};
use lockbench_etcd::system::ETCD;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long an etcd put of `key` (base64, as the HTTP gateway takes it) took, and whether it
/// succeeded.
fn put(addr: SocketAddr, key: &str) -> (Duration, bool) {
    let body = format!(r#"{{"key":"{key}","value":"dg=="}}"#);
    let started = Instant::now();
    let answer = (|| -> std::io::Result<String> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        write!(
            s,
            "POST /v3/kv/put HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    })();
    let ok = answer.is_ok_and(|a| a.starts_with("HTTP/1.1 200") && a.contains("revision"));
    (started.elapsed(), ok)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_frozen_disk_is_seen_by_etcd_and_put_right_at_heal() {
    let Some(tc) = test_cluster("d", 209, &[ETCD]).await else {
        return;
    };
    let names = ["etcd1", "etcd2", "etcd3"];
    let disks = tc.cluster.mount_slow_disks(&names).await.unwrap();
    assert_eq!(disks.names(), names);
    let state = tc.cluster.state_dir().to_path_buf();
    assert_eq!(lockbench_slowdisk::mounts(&state).len(), 3);
    let addr = tc
        .cluster
        .topology()
        .client_addr(lockbench_cluster::by_name("etcd1").unwrap());
    let (fast, ok) = tokio::task::spawn_blocking(move || put(addr, "YmVmb3Jl"))
        .await
        .unwrap();
    assert!(ok, "a put on the pass-through fails");

    // Slow: every write and sync answered 1.2 s late. A put waits for the leader's and a
    // follower's fdatasync, and etcd's own log warns of the slow sync (it does past 1 s).
    let clock = RunClock::start();
    let mut nemesis = nemesis_of(&tc, ETCD);
    let slow = Fault::Disk {
        targets: Targets::All,
        delay: Some(Duration::from_millis(1200)),
        freeze: false,
    };
    let ev = nemesis.apply(&slow, &clock).await;
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].applied, "{ev:?}");
    assert_eq!(
        (ev[0].fault, ev[0].phase),
        (FaultKind::Disk, FaultPhase::Start)
    );
    let (took, ok) = tokio::task::spawn_blocking(move || put(addr, "c2xvdw=="))
        .await
        .unwrap();
    assert!(ok, "a put on a slow disk still succeeds");
    assert!(
        took >= Duration::from_millis(1200),
        "a put took {took:?} on a disk 1.2 s slow ({fast:?} before)"
    );
    let logs: String = names
        .iter()
        .map(|n| std::fs::read_to_string(tc.cluster.log_file(n)).unwrap_or_default())
        .collect();
    assert!(
        logs.contains("slow fdatasync"),
        "etcd's logs do not mention the slow fdatasync"
    );
    let healed = nemesis.apply(&Fault::Heal, &clock).await;
    let stop = healed
        .iter()
        .find(|e| e.fault == FaultKind::Disk)
        .unwrap_or_else(|| panic!("no disk stop event at heal: {healed:?}"));
    assert_eq!(stop.phase, FaultPhase::Stop);
    assert!(stop.note.contains("operations held"), "{}", stop.note);
    assert!(
        stop.note.contains("WAL sync over 1 s x"),
        "the stop event does not count etcd's slow syncs: {}",
        stop.note
    );

    // Frozen under the leader while a client keeps writing: the leader's raft loop waits on
    // its WAL, its heartbeats stop, and the followers elect one of themselves.
    let leader = nemesis.leader().await.unwrap();
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let writing = writing.clone();
        std::thread::spawn(move || {
            while writing.load(Ordering::Relaxed) {
                put(addr, "ZnJvemVu");
            }
        })
    };
    let freeze = Fault::Disk {
        targets: Targets::Leader,
        delay: None,
        freeze: true,
    };
    let ev = nemesis.apply(&freeze, &clock).await;
    assert!(ev[0].applied, "{ev:?}");
    assert_eq!(ev[0].targets, vec![leader.clone()]);
    let started = Instant::now();
    let mut now = leader.clone();
    while started.elapsed() < Duration::from_secs(20) {
        // The frozen leader may still call itself leader beside the new one.
        match nemesis.leader().await {
            Ok(l) if l != leader => {
                now = l;
                break;
            }
            Err(e) if e.to_string().contains("several members") => {
                now = e.to_string();
                break;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let healed = nemesis.heal_all(&clock).await;
    writing.store(false, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || writer.join().unwrap())
        .await
        .unwrap();
    assert_ne!(
        now, leader,
        "no other leader within 20 s of freezing {leader}'s disk"
    );
    let stop = healed
        .iter()
        .find(|e| e.fault == FaultKind::Disk)
        .unwrap_or_else(|| panic!("no disk stop event at heal: {healed:?}"));
    assert!(
        stop.note.contains("leader elected x"),
        "the stop event does not count the election in etcd's logs: {}",
        stop.note
    );

    disks.release().await.unwrap();
    assert!(
        lockbench_slowdisk::mounts(&state).is_empty(),
        "a pass-through is left"
    );
    let (_, ok) = tokio::task::spawn_blocking(move || put(addr, "YWZ0ZXI="))
        .await
        .unwrap();
    assert!(ok, "a put after the pass-throughs were removed fails");
}
