//! Faults against real servers. Each test brings up its *own* small cluster in its own state
//! directory, namespace prefix and subnet (`lb-<tag>-`, `10.77.2xx.0/24`), so it can partition,
//! pause and kill freely while other tests use the shared managed cluster, and tears it down
//! at the end, checking that no namespace, link or rule of its network remains.
//!
//! These tests need root (network namespaces, iptables). CI runs as root, so they never skip
//! there: without root they FAIL saying why, unless `LOCKBENCH_ALLOW_NO_ROOT=1`.

use lockbench_chaos::{Group, Nemesis, ServerNemesis};
use lockbench_cluster::{Cluster, PrivateCluster};
use lockbench_core::{
    Cut, CutDirection, Fault, FaultEvent, FaultPhase, PartitionSpec, RunClock, Targets,
};
use lockbench_etcd::system::ETCD;
use lockbench_redis::system::{REDIS, REDLOCK};
use lockbench_zookeeper::system::ZOOKEEPER;
use rand::SeedableRng;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A cluster of `groups` of its own, on `10.77.<octet>.0/24`.
pub(crate) async fn test_cluster(tag: &str, octet: u8, groups: &[Group]) -> Option<PrivateCluster> {
    PrivateCluster::start(tag, &format!("10.77.{octet}.0/24"), groups).await
}

/// The server nemesis of `group` on `tc`, its choices seeded.
pub(crate) fn nemesis_of(tc: &PrivateCluster, group: Group) -> ServerNemesis {
    ServerNemesis::new(
        tc.cluster.clone(),
        group,
        rand_chacha::ChaCha8Rng::seed_from_u64(7),
    )
}

/// Server `name`'s client address on `tc`.
fn addr(tc: &PrivateCluster, name: &str) -> SocketAddr {
    let spec = lockbench_cluster::by_name(name).unwrap();
    tc.cluster.topology().client_addr(spec)
}

/// One RESP command from this process (the root namespace, like the coordinator's clients).
pub(crate) fn redis(addr: SocketAddr, args: &[&str]) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes())?;
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).trim().to_string())
}

async fn redis_async(addr: SocketAddr, args: &[&str]) -> std::io::Result<String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        redis(addr, &args.iter().map(|a| a.as_str()).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

/// `PING` from a process running inside a client host (`redis-cli` under `timeout`).
async fn ping_from_host(host: &lockbench_chaos::Host, addr: SocketAddr) -> bool {
    let mut cmd = host.command("timeout");
    cmd.args(["3", "redis-cli", "-h", &addr.ip().to_string(), "-p"])
        .arg(addr.port().to_string())
        .arg("PING");
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "PONG"
}

async fn eventually(what: &str, timeout: Duration, mut check: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < timeout, "not within {timeout:?}: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn applied(events: &[FaultEvent]) {
    assert!(!events.is_empty());
    for e in events {
        assert!(e.applied, "not applied: {e:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_cuts_traffic_and_heal_restores_it() {
    let Some(tc) = test_cluster("p", 201, &[REDIS]).await else {
        return;
    };
    let clock = RunClock::start();
    let client = tc.net.client_host(1).unwrap();
    let redis_addr = addr(&tc, "redis");
    let mut nemesis = nemesis_of(&tc, REDIS);
    assert!(ping_from_host(&client, redis_addr).await);
    assert_eq!(redis_async(redis_addr, &["PING"]).await.unwrap(), "+PONG");

    // Isolating the server cuts every client off: the worker host's and the coordinator's.
    let ev = nemesis
        .apply(
            &Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Nodes(vec!["redis".into()])),
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert_eq!(ev[0].targets, vec!["redis"]);
    assert_eq!(ev[0].phase, FaultPhase::Start);
    assert!(
        !ping_from_host(&client, redis_addr).await,
        "client host still reaches redis"
    );
    assert!(redis_async(redis_addr, &["PING"]).await.is_err());
    let ev = nemesis.apply(&Fault::Heal, &clock).await;
    applied(&ev);
    assert_eq!(ev[0].phase, FaultPhase::Stop);
    eventually(
        "client host reaches redis after heal",
        Duration::from_secs(30),
        async || ping_from_host(&client, redis_addr).await,
    )
    .await;
    assert_eq!(redis_async(redis_addr, &["PING"]).await.unwrap(), "+PONG");

    // Isolating the client host cuts only it off.
    let ev = nemesis
        .apply(
            &Fault::Partition {
                split: PartitionSpec::Isolate(Targets::Nodes(vec!["client1".into()])),
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert!(!ping_from_host(&client, redis_addr).await);
    assert_eq!(redis_async(redis_addr, &["PING"]).await.unwrap(), "+PONG");

    // A crash of whatever applied the faults (the nemesis is dropped without healing), with a
    // worker process left in the client host: cleanup() undoes it all.
    let mut sleeper = tokio::process::Command::from({
        let mut c = client.command("sleep");
        c.arg("1000");
        c
    })
    .spawn()
    .unwrap();
    drop(nemesis);
    let done = lockbench_chaos::cleanup(&tc.cluster).await.unwrap();
    assert!(done.iter().any(|l| l.contains("flushed")), "{done:?}");
    assert!(done.iter().any(|l| l.contains("client1")), "{done:?}");
    let status = tokio::time::timeout(Duration::from_secs(10), sleeper.wait())
        .await
        .expect("worker process killed by cleanup")
        .unwrap();
    assert!(!status.success());
    assert!(tc.net.client_hosts().is_empty());

    // clients-off with a fresh client host; heal_all heals it.
    let client = tc.net.client_host(1).unwrap();
    let mut nemesis = nemesis_of(&tc, REDIS);
    let ev = nemesis
        .apply(
            &Fault::Partition {
                split: PartitionSpec::ClientsOff,
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert_eq!(ev[0].targets, vec!["client1", "coordinator"]);
    assert!(!ping_from_host(&client, redis_addr).await);
    assert!(redis_async(redis_addr, &["PING"]).await.is_err());
    applied(&nemesis.heal_all(&clock).await);
    eventually(
        "reachable after heal_all",
        Duration::from_secs(30),
        async || ping_from_host(&client, redis_addr).await,
    )
    .await;
    tc.finish().await;
}

/// Packets the DROP rules of `host`'s INPUT chain have dropped (`iptables -S -v` counters).
fn dropped_in(host: &lockbench_chaos::Host) -> u64 {
    let out = host
        .command("iptables")
        .args(["-w", "-S", "INPUT", "-v"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("-j DROP"))
        .filter_map(|l| {
            let mut words = l.split_whitespace().skip_while(|w| *w != "-c");
            words.nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// A cut of one client host from the server, one way at a time: only that host loses the
/// server (another client host and the coordinator keep it), the rules sit only on the side
/// that drops, and their counters show the packets they dropped (the effect on the wire: with
/// replies lost, the client's SYN reached the server and its answer was dropped at the client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_way_cut_drops_only_the_way_asked_and_only_for_its_client() {
    let Some(tc) = test_cluster("w", 207, &[REDIS]).await else {
        return;
    };
    let clock = RunClock::start();
    let cut_off = tc.net.client_host(1).unwrap();
    let other = tc.net.client_host(2).unwrap();
    let server = tc
        .net
        .server_host(lockbench_cluster::by_name("redis").unwrap());
    let redis_addr = addr(&tc, "redis");
    let mut nemesis = nemesis_of(&tc, REDIS);
    for (direction, dropping, clean, pair) in [
        (
            CutDirection::Requests,
            &server,
            &cut_off,
            "client1-/->redis",
        ),
        (CutDirection::Replies, &cut_off, &server, "redis-/->client1"),
    ] {
        let ev = nemesis
            .apply(
                &Fault::Partition {
                    split: PartitionSpec::Cut(Cut {
                        clients: Targets::Nodes(vec!["client1".into()]),
                        servers: Targets::All,
                        direction,
                    }),
                },
                &clock,
            )
            .await;
        applied(&ev);
        assert_eq!(ev[0].targets, vec!["client1", "redis"], "{direction:?}");
        assert!(
            ev[0].note.contains(pair) && ev[0].note.contains("checked: client1 reach(es) none"),
            "{direction:?}: {}",
            ev[0].note
        );
        assert!(!ping_from_host(&cut_off, redis_addr).await, "{direction:?}");
        assert!(ping_from_host(&other, redis_addr).await, "{direction:?}");
        assert_eq!(redis_async(redis_addr, &["PING"]).await.unwrap(), "+PONG");
        assert!(dropped_in(dropping) > 0, "{direction:?}: nothing dropped");
        assert!(
            !clean.has_firewall_rules(None),
            "{direction:?}: rules on the other side"
        );
        applied(&nemesis.apply(&Fault::Heal, &clock).await);
        eventually(
            "client1 reaches redis after heal",
            Duration::from_secs(30),
            async || ping_from_host(&cut_off, redis_addr).await,
        )
        .await;
    }

    // A cut names client hosts and servers, each on its side.
    let ev = nemesis
        .apply(
            &Fault::Partition {
                split: PartitionSpec::Cut(Cut {
                    clients: Targets::Nodes(vec!["redis".into()]),
                    servers: Targets::All,
                    direction: CutDirection::Both,
                }),
            },
            &clock,
        )
        .await;
    assert!(
        !ev[0].applied && ev[0].note.contains("redis is not one"),
        "{ev:?}"
    );
    tc.finish().await;
}

#[tokio::test]
async fn partitions_are_reported_unavailable_on_loopback() {
    // No `up`: a state dir without a topology record is a loopback cluster.
    let dir = std::env::temp_dir().join(format!("lockbench-chaos-lo-{}", std::process::id()));
    let mut nemesis = ServerNemesis::new(
        Cluster::new(dir.clone()),
        REDLOCK,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
    );
    let clock = RunClock::start();
    for fault in [
        Fault::Partition {
            split: PartitionSpec::RedlockOverlap,
        },
        Fault::Heal,
        Fault::LinkBlackhole {
            targets: Targets::One,
        },
    ] {
        let ev = nemesis.apply(&fault, &clock).await;
        assert_eq!(ev.len(), 1);
        assert!(!ev[0].applied && ev[0].note.contains("loopback"), "{ev:?}");
    }
    let ev = nemesis
        .apply(
            &Fault::Pause {
                targets: Targets::Leader,
            },
            &clock,
        )
        .await;
    assert!(!ev[0].applied && ev[0].note.contains("no leader"), "{ev:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_the_zookeeper_leader_elects_another_and_resume_restores_it() {
    let Some(tc) = test_cluster("z", 202, &[ZOOKEEPER]).await else {
        return;
    };
    let clock = RunClock::start();
    let mut nemesis = nemesis_of(&tc, ZOOKEEPER);
    let old = nemesis.leader().await.unwrap();
    let ev = nemesis
        .apply(
            &Fault::Pause {
                targets: Targets::Leader,
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert_eq!(ev[0].targets, vec![old.clone()]);
    let pid = tc.cluster.server_pid(&old).unwrap();
    // The group stop reaches the JVM's threads asynchronously.
    eventually(
        "the paused leader is stopped",
        Duration::from_secs(10),
        async || {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            state
                .rsplit_once(')')
                .unwrap()
                .1
                .trim_start()
                .starts_with('T')
        },
    )
    .await;
    eventually(
        "a new ZooKeeper leader",
        Duration::from_secs(90),
        async || nemesis.leader().await.is_ok_and(|l| l != old),
    )
    .await;
    let ev = nemesis
        .apply(
            &Fault::Resume {
                targets: Targets::Leader,
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert_eq!(
        ev[0].targets,
        vec![old.clone()],
        "resume targets what was paused"
    );
    tc.cluster
        .wait_healthy(&["zk1", "zk2", "zk3"], Duration::from_secs(90))
        .await
        .unwrap();
    tc.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_resolution_finds_the_zookeeper_and_etcd_leaders() {
    let Some(tc) = test_cluster("l", 203, &[ZOOKEEPER, ETCD]).await else {
        return;
    };
    let status = tc.cluster.status().await.unwrap();
    let zk_leader = status
        .servers
        .iter()
        .find(|s| s.role.as_deref() == Some("leader"))
        .unwrap()
        .name
        .clone();
    let mut zk = nemesis_of(&tc, ZOOKEEPER);
    assert_eq!(zk.leader().await.unwrap(), zk_leader);
    let followers = zk.resolve(&Targets::Followers).await.unwrap();
    assert_eq!(followers.len(), 2);
    assert!(!followers.contains(&zk_leader));

    // etcd's own view, from etcdctl: the leader's member id, and each endpoint's id.
    let endpoints: Vec<String> = status.endpoints.get("etcd").to_vec();
    let out = std::process::Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "endpoint",
            "status",
            "-w",
            "json",
            "--endpoints",
            &endpoints.join(","),
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let leader_endpoint = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["Status"]["header"]["member_id"] == e["Status"]["leader"])
        .map(|e| e["Endpoint"].as_str().unwrap().to_string())
        .unwrap();
    let etcd = nemesis_of(&tc, ETCD);
    let name = etcd.leader().await.unwrap();
    let spec = lockbench_cluster::by_name(&name).unwrap();
    assert_eq!(tc.cluster.topology().endpoint(spec), leader_endpoint);
    tc.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_start_restart_a_redis_server_empty() {
    let Some(tc) = test_cluster("k", 204, &[REDLOCK]).await else {
        return;
    };
    let clock = RunClock::start();
    let addr = addr(&tc, "redlock2");
    assert_eq!(redis_async(addr, &["SET", "k", "v"]).await.unwrap(), "+OK");
    let before = tc.cluster.server_pid("redlock2").unwrap();
    let mut nemesis = nemesis_of(&tc, REDLOCK);
    let ev = nemesis
        .apply(
            &Fault::Kill {
                targets: Targets::Nodes(vec!["redlock2".into()]),
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert!(tc.cluster.server_pid("redlock2").is_none());
    assert!(redis_async(addr, &["PING"]).await.is_err());
    let ev = nemesis
        .apply(
            &Fault::Start {
                targets: Targets::All,
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert_eq!(ev[0].targets, vec!["redlock2"]);
    assert!(ev[0].note.contains("EMPTY"), "{ev:?}");
    tc.cluster
        .wait_healthy(&["redlock2"], Duration::from_secs(30))
        .await
        .unwrap();
    assert_ne!(tc.cluster.server_pid("redlock2").unwrap(), before);
    assert_eq!(redis_async(addr, &["EXISTS", "k"]).await.unwrap(), ":0");
    // Nothing left to undo: heal_all only flushes (no rules) and restarts nothing.
    let ev = nemesis.heal_all(&clock).await;
    assert!(
        ev.iter()
            .all(|e| e.fault == lockbench_core::FaultKind::Partition),
        "{ev:?}"
    );
    tc.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_jump_shortens_every_ttl() {
    let Some(tc) = test_cluster("c", 205, &[REDIS]).await else {
        return;
    };
    let clock = RunClock::start();
    let addr = addr(&tc, "redis");
    for args in [
        ["SET", "long", "a", "PX", "20000"],
        ["SET", "short", "a", "PX", "1500"],
    ] {
        assert_eq!(redis_async(addr, &args).await.unwrap(), "+OK");
    }
    assert_eq!(
        redis_async(addr, &["SET", "counter", "1"]).await.unwrap(),
        "+OK"
    );
    let mut nemesis = nemesis_of(&tc, REDIS);
    let ev = nemesis
        .apply(
            &Fault::ClockJump {
                targets: Targets::One,
                by: Duration::from_secs(5),
            },
            &clock,
        )
        .await;
    applied(&ev);
    assert!(ev[0].note.contains("EMULATED"), "{ev:?}");
    assert!(
        ev[0].note.contains("1 keys' PTTL shortened, 1 expired"),
        "{ev:?}"
    );
    let pttl: i64 = redis_async(addr, &["PTTL", "long"]).await.unwrap()[1..]
        .parse()
        .unwrap();
    assert!((10_000..=15_000).contains(&pttl), "PTTL {pttl}");
    assert_eq!(redis_async(addr, &["EXISTS", "short"]).await.unwrap(), ":0");
    assert_eq!(
        redis_async(addr, &["PTTL", "counter"]).await.unwrap(),
        ":-1"
    );
    tc.finish().await;
}
