//! One fault of every kind compose mode applies, on the running compose cluster, each checked
//! where its effect shows: from here (where lockbench and its clients run), from inside a
//! container's network namespace (server to server), in Docker's state, or in Redis.
//! A fault the nemesis reports as applied but whose effect is missing fails the test.

use lockbench_chaos::{Group, Host, LinkNemesis, LinkProxies, Nemesis, Reach};
use lockbench_compose::{ComposeNemesis, Containers};
use lockbench_core::{Fault, FaultEvent, LossMode, PartitionSpec, RunClock, Targets};
use lockbench_etcd::system::ETCD;
use lockbench_redis::system::{FAILOVER, REDLOCK as REDLOCK_GROUP};
use lockbench_zookeeper::system::ZOOKEEPER;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn nemesis(group: Group) -> ComposeNemesis {
    lockbench_compose::nemesis(group, ChaCha8Rng::seed_from_u64(1))
}

fn nodes(names: &[&str]) -> Targets {
    Targets::Nodes(names.iter().map(|s| s.to_string()).collect())
}

fn addr(name: &str) -> String {
    let spec = lockbench_cluster::by_name(name).unwrap();
    lockbench_compose::topology().client_addr(spec).to_string()
}

/// One RESP command to a Redis server; the reply's first line, `None` when nothing answers
/// within a second.
async fn redis(at: &str, args: &[&str]) -> Option<String> {
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(at).await?;
        s.write_all(req.as_bytes()).await?;
        let mut buf = vec![0u8; 512];
        let n = s.read(&mut buf).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&buf[..n]).into_owned())
    };
    match tokio::time::timeout(Duration::from_secs(1), exchange).await {
        Ok(Ok(r)) if !r.is_empty() => Some(r.lines().next().unwrap_or_default().to_string()),
        _ => None,
    }
}

async fn pings(name: &str) -> bool {
    redis(&addr(name), &["PING"]).await.as_deref() == Some("+PONG")
}

/// Waits up to 15 s for `name` to answer `PING`.
async fn pings_again(name: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if pings(name).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// `true` when a TCP connect from inside `from`'s container (a server's or a client's) to server `to` completes within
/// half a second.
pub fn reaches(from: &str, to: &str) -> bool {
    let pid = super::docker(&[
        "inspect",
        "--format",
        "{{.State.Pid}}",
        &lockbench_compose::container(from),
    ]);
    let host = Host {
        name: from.into(),
        netns: format!("/proc/{}/ns/net", pid.trim()),
        addr: std::net::Ipv4Addr::UNSPECIFIED,
        exec: None,
    };
    let to: std::net::SocketAddr = addr(to).parse().unwrap();
    host.run_inside(move || {
        std::net::TcpStream::connect_timeout(&to, Duration::from_millis(500)).is_ok()
    })
    .unwrap()
}

pub fn state(name: &str) -> String {
    super::docker(&[
        "inspect",
        "--format",
        "{{.State.Running}} {{.State.Paused}}",
        &lockbench_compose::container(name),
    ])
    .trim()
    .to_string()
}

async fn apply(n: &mut impl Nemesis, f: Fault, clock: &RunClock) -> Vec<FaultEvent> {
    let events = n.apply(&f, clock).await;
    assert!(
        !events.is_empty() && events.iter().all(|e| e.applied),
        "{f:?}: {events:?}"
    );
    events
}

async fn heal(n: &mut impl Nemesis, clock: &RunClock, back: &[&str]) {
    apply(n, Fault::Heal, clock).await;
    for s in back {
        assert!(pings_again(s).await, "{s} is unreachable after heal");
    }
}

const REDLOCK: [&str; 5] = ["redlock1", "redlock2", "redlock3", "redlock4", "redlock5"];

/// Pause, kill, every partition shape, the iptables black hole, packet loss and the clock jump
/// on the Redlock servers; leader targets on etcd; link delay through the in-process proxy; the
/// Redis failover on the Sentinel pair.
pub async fn every_fault_takes_effect() {
    let clock = RunClock::start();
    let mut n = nemesis(REDLOCK_GROUP);
    for s in REDLOCK {
        assert!(pings(s).await, "{s} does not answer before the faults");
    }
    pause_and_kill(&mut n, &clock).await;
    partitions(&mut n, &clock).await;
    blackhole_and_clock_jump(&mut n, &clock).await;
    packet_loss(&mut n, &clock).await;
    assert!(n.heal_all(&clock).await.iter().all(|e| e.applied));

    leader_targets(&clock).await;
    link_delay_through_the_proxy(&clock).await;
    redis_failover(&clock).await;
}

/// Pause and resume, kill and start, on one Redlock server each.
async fn pause_and_kill(n: &mut ComposeNemesis, clock: &RunClock) {
    apply(
        n,
        Fault::Pause {
            targets: nodes(&["redlock1"]),
        },
        clock,
    )
    .await;
    assert_eq!(state("redlock1"), "true true");
    assert!(!pings("redlock1").await, "a paused server still answers");
    apply(
        n,
        Fault::Resume {
            targets: nodes(&["redlock1"]),
        },
        clock,
    )
    .await;
    assert!(pings_again("redlock1").await, "no answer after resume");

    apply(
        n,
        Fault::Kill {
            targets: nodes(&["redlock2"]),
        },
        clock,
    )
    .await;
    assert_eq!(
        state("redlock2"),
        "false false",
        "a killed container still runs"
    );
    assert!(!pings("redlock2").await, "a killed server still answers");
    apply(
        n,
        Fault::Start {
            targets: nodes(&["redlock2"]),
        },
        clock,
    )
    .await;
    assert!(pings_again("redlock2").await, "no answer after start");
}

/// Every partition shape on the Redlock servers, each healed.
async fn partitions(n: &mut ComposeNemesis, clock: &RunClock) {
    // isolate: cut from the clients and from the other servers.
    let split = PartitionSpec::Isolate(nodes(&["redlock3"]));
    apply(n, Fault::Partition { split }, clock).await;
    assert!(
        !pings("redlock3").await,
        "an isolated server answers the clients"
    );
    assert!(
        pings("redlock1").await,
        "a server outside the isolation is cut off"
    );
    assert!(!reaches("redlock1", "redlock3") && !reaches("redlock3", "redlock1"));
    heal(n, clock, &["redlock3"]).await;
    assert!(
        reaches("redlock1", "redlock3"),
        "servers still cut after heal"
    );

    // halves: a group split; the minority still sees itself, the clients stay with the
    // majority.
    let ev = apply(
        n,
        Fault::Partition {
            split: PartitionSpec::Halves,
        },
        clock,
    )
    .await;
    let minority: Vec<&str> = ev[0].targets.iter().map(String::as_str).collect();
    let majority: Vec<&str> = REDLOCK
        .into_iter()
        .filter(|s| !minority.contains(s))
        .collect();
    assert_eq!((minority.len(), majority.len()), (2, 3), "{ev:?}");
    for s in &minority {
        assert!(!pings(s).await, "minority server {s} answers the clients");
    }
    for s in &majority {
        assert!(
            pings(s).await,
            "majority server {s} is cut off from the clients"
        );
    }
    assert!(
        reaches(minority[0], minority[1]),
        "the minority is split within"
    );
    assert!(
        !reaches(minority[0], majority[0]),
        "the halves still see each other"
    );
    heal(n, clock, &REDLOCK).await;

    // redlock-overlap: asymmetric for the clients (the coordinator is on side A = 1,2,3);
    // servers keep seeing each other.
    let split = PartitionSpec::RedlockOverlap;
    apply(n, Fault::Partition { split }, clock).await;
    for s in ["redlock1", "redlock2", "redlock3"] {
        assert!(
            pings(s).await,
            "{s} (side A) is cut off from the coordinator"
        );
    }
    for s in ["redlock4", "redlock5"] {
        assert!(!pings(s).await, "{s} (side B only) answers the coordinator");
    }
    assert!(
        reaches("redlock5", "redlock1"),
        "servers are cut from each other"
    );
    heal(n, clock, &REDLOCK).await;

    // clients-off: every server cut from the clients, not from each other.
    let split = PartitionSpec::ClientsOff;
    apply(n, Fault::Partition { split }, clock).await;
    for s in REDLOCK {
        assert!(!pings(s).await, "{s} answers with the clients cut off");
    }
    assert!(
        reaches("redlock1", "redlock2"),
        "servers are cut from each other"
    );
    heal(n, clock, &REDLOCK).await;
}

/// The iptables black hole and the clock jump on redlock1.
async fn blackhole_and_clock_jump(n: &mut ComposeNemesis, clock: &RunClock) {
    // link-blackhole without link proxies: the target drops every client's packets.
    let targets = nodes(&["redlock1"]);
    apply(n, Fault::LinkBlackhole { targets }, clock).await;
    assert!(
        !pings("redlock1").await,
        "a black-holed server answers the clients"
    );
    assert!(
        reaches("redlock2", "redlock1"),
        "the black hole cut a server link"
    );
    heal(n, clock, &["redlock1"]).await;

    // clock-jump: the TTL emulation, as in managed mode.
    let r1 = addr("redlock1");
    let set = redis(&r1, &["SET", "compose-test:ttl", "x", "PX", "60000"]).await;
    assert_eq!(set.as_deref(), Some("+OK"));
    let by = Duration::from_secs(30);
    let targets = nodes(&["redlock1"]);
    apply(n, Fault::ClockJump { targets, by }, clock).await;
    let pttl = redis(&r1, &["PTTL", "compose-test:ttl"]).await.unwrap();
    let pttl: i64 = pttl.trim_start_matches(':').parse().unwrap();
    assert!(
        (0..=30_000).contains(&pttl),
        "PTTL {pttl} after a 30 s jump"
    );
}

/// `packet-loss` on redlock1's links, counted end to end with UDP datagrams both ways between
/// here (the coordinator) and its container, not by the rules' counters: `nth` drops exactly
/// one in four each way, `random` its share within five standard deviations, and heal restores
/// the link (what `chaos/tests/integration/loss.rs` checks on a managed host).
async fn packet_loss(n: &mut ComposeNemesis, clock: &RunClock) {
    const SENT: u32 = 2000;
    let site = Containers::new();
    let r1 = site
        .server_host(lockbench_cluster::by_name("redlock1").unwrap())
        .expect("redlock1's container runs");
    let me = site
        .coordinator_addr()
        .expect("the coordinator's address on the compose network");
    let both = || {
        let r1 = r1.clone();
        tokio::task::spawn_blocking(move || {
            let to = lockbench_cluster::udp_delivered(None, Some(&r1), r1.addr, SENT).unwrap();
            let back = lockbench_cluster::udp_delivered(Some(&r1), None, me, SENT).unwrap();
            (to, back)
        })
    };
    assert_eq!(
        both().await.unwrap(),
        (SENT, SENT),
        "a clean link loses datagrams"
    );
    let loss = |rate, mode| Fault::PacketLoss {
        targets: nodes(&["redlock1"]),
        rate,
        mode,
    };

    // nth: exactly one in four, each way.
    let ev = apply(n, loss(0.25, LossMode::Nth), clock).await;
    assert_eq!(ev[0].targets, vec!["redlock1"]);
    assert!(ev[0].note.contains("every 4th packet"), "{}", ev[0].note);
    assert!(
        ev[0]
            .note
            .contains("inside the containers' network namespaces"),
        "{}",
        ev[0].note
    );
    assert_eq!(
        both().await.unwrap(),
        (SENT * 3 / 4, SENT * 3 / 4),
        "nth 0.25 must drop exactly one datagram in four each way"
    );
    let healed = apply(n, Fault::Heal, clock).await;
    let stop = healed
        .iter()
        .find(|e| e.fault == lockbench_core::FaultKind::PacketLoss)
        .unwrap();
    assert!(
        stop.note.contains("measured over the window's traffic") && stop.note.contains("(25.0%)"),
        "{}",
        stop.note
    );
    assert_eq!(
        both().await.unwrap(),
        (SENT, SENT),
        "heal restores the link"
    );

    // random: the kernel's draw, within five standard deviations each way.
    let ev = apply(n, loss(0.2, LossMode::Random), clock).await;
    assert!(ev[0].note.contains("not seeded"), "{}", ev[0].note);
    let (to, back) = both().await.unwrap();
    let sd = (f64::from(SENT) * 0.2 * 0.8).sqrt();
    for (way, got) in [("to redlock1", to), ("from redlock1", back)] {
        let lost = f64::from(SENT - got);
        assert!(
            (lost - 0.2 * f64::from(SENT)).abs() < 5.0 * sd,
            "{way}: lost {lost} of {SENT} datagrams at random 0.2"
        );
    }
    heal(n, clock, &["redlock1"]).await;
    assert_eq!(
        both().await.unwrap(),
        (SENT, SENT),
        "heal restores the link"
    );
}

/// `leader` resolves by the managed cluster's probes, here inside the containers.
async fn leader_targets(clock: &RunClock) {
    let zk = nemesis(ZOOKEEPER);
    let leader = zk.leader().await.expect("a ZooKeeper leader");
    assert!(leader.starts_with("zk"), "{leader}");
    let mut etcd = nemesis(ETCD);
    let leader = etcd.leader().await.expect("an etcd leader");
    let ev = apply(
        &mut etcd,
        Fault::Pause {
            targets: Targets::Leader,
        },
        clock,
    )
    .await;
    assert_eq!(ev[0].targets, vec![leader.clone()]);
    assert_eq!(state(&leader), "true true", "the leader is not paused");
    apply(
        &mut etcd,
        Fault::Resume {
            targets: Targets::Leader,
        },
        clock,
    )
    .await;
    assert_eq!(state(&leader), "true false", "the leader is still paused");
}

/// `link-delay` through the in-process proxy, as managed mode runs it.
async fn link_delay_through_the_proxy(clock: &RunClock) {
    let site = Containers::new();
    let servers = site.servers(REDLOCK_GROUP);
    let proxied: Vec<(String, String)> = vec![("redlock1".into(), addr("redlock1"))];
    let mut proxies = LinkProxies::new("127.0.0.1".parse().unwrap(), proxied);
    let endpoints = proxies
        .endpoints_for("coordinator", &lockbench_compose::endpoints())
        .await
        .unwrap();
    let via = endpoints.get("redlock")[0].clone();
    assert_ne!(via, addr("redlock1"), "not proxied");
    let rtt = async || {
        let start = Instant::now();
        assert_eq!(redis(&via, &["PING"]).await.as_deref(), Some("+PONG"));
        start.elapsed()
    };
    assert!(
        rtt().await < Duration::from_millis(150),
        "slow before the delay"
    );
    let mut links = LinkNemesis::on(
        Arc::new(proxies),
        site,
        servers,
        ChaCha8Rng::seed_from_u64(1),
    );
    let latency = Duration::from_millis(300);
    let targets = nodes(&["redlock1"]);
    let f = Fault::LinkDelay {
        targets,
        latency,
        jitter: Duration::ZERO,
    };
    apply(&mut links, f, clock).await;
    let delayed = rtt().await;
    assert!(
        delayed >= latency,
        "a PING took {delayed:?} through a {latency:?} delay"
    );
    apply(&mut links, Fault::Heal, clock).await;
    assert!(
        rtt().await < Duration::from_millis(150),
        "still slow after heal"
    );
}

/// `redis-failover`: the replica cut from the primary, the primary killed right after its
/// next grant (one fencing counter INCRed here), Sentinel promotes the replica; heal brings
/// the old primary back as a replica.
async fn redis_failover(clock: &RunClock) {
    let mut n = nemesis(FAILOVER);
    let primary = n.leader().await.expect("Sentinel names a primary");
    let grant = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        redis(&addr(&primary), &["INCR", "compose-test:fence:1"]).await
    };
    let (ev, incr) = tokio::join!(n.apply(&Fault::RedisFailover, clock), grant);
    // The grant's reply may be lost to the kill that follows it at once (the fault sees the
    // grant in the primary's counter, then kills): the note below says it was made.
    assert!(
        incr.as_ref().is_none_or(|r| r.starts_with(':')),
        "the grant was refused: {incr:?}"
    );
    assert!(ev.len() == 1 && ev[0].applied, "{ev:?}");
    assert_eq!(ev[0].targets, vec![primary.clone()]);
    assert!(ev[0].note.contains("right after its next grant"), "{ev:?}");
    assert_eq!(state(&primary), "false false", "the primary still runs");
    let healed = apply(&mut n, Fault::Heal, clock).await;
    assert!(healed[0].note.contains("made a replica"), "{healed:?}");
    let now = n.leader().await.expect("Sentinel names a primary");
    assert_ne!(now, primary, "Sentinel did not promote the replica");
    let role = redis(&addr(&primary), &["ROLE"]).await;
    assert!(role.is_some(), "the old primary does not answer");
}
