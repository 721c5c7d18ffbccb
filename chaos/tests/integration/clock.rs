//! The `clock` fault against real servers in a private cluster: a Redis server's wall clock
//! moved forward and back, and made to drift, through the clock shim, seen in the server's own
//! answers (`TIME`, a key's remaining life), and put right at heal or, after a crash, by the
//! cleanup; an etcd server, whose Go runtime reads the kernel's clock without the C library,
//! recorded as not shifted.

use crate::faults::{nemesis_of, redis, test_cluster};
use lockbench_chaos::Nemesis;
use lockbench_core::{ClockDrift, ClockShift, Fault, FaultKind, FaultPhase, RunClock, Targets};
use lockbench_etcd::system::ETCD;
use lockbench_redis::system::REDIS;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds the server's `TIME` is ahead of this machine's clock.
fn ahead(addr: std::net::SocketAddr) -> i64 {
    let reply = redis(addr, &["TIME"]).unwrap();
    let secs: i64 = reply
        .lines()
        .nth(2)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("TIME answered {reply:?}"));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    secs - now
}

/// A key's remaining life in milliseconds, as the server counts it.
fn pttl(addr: std::net::SocketAddr, key: &str) -> i64 {
    let reply = redis(addr, &["PTTL", key]).unwrap();
    reply.trim_start_matches(':').parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shifted_clock_is_seen_by_the_server_and_put_back_at_heal() {
    let Some(tc) = test_cluster("t", 208, &[REDIS, ETCD]).await else {
        return;
    };
    let clock = RunClock::start();
    let spec = lockbench_cluster::by_name("redis").unwrap();
    let addr = tc.cluster.topology().client_addr(spec);
    let mut nemesis = nemesis_of(&tc, REDIS);
    let shift = |text: &str| Fault::Clock {
        targets: Targets::All,
        shift: Some(ClockShift::parse(text).unwrap()),
        drift: None,
    };
    assert!(ahead(addr).abs() <= 2, "the clock is off before any fault");

    // Forward an hour: the server says so, and a key with a minute to live is gone.
    assert_eq!(
        redis(addr, &["SET", "k", "v", "PX", "60000"]).unwrap(),
        "+OK"
    );
    let ev = nemesis.apply(&shift("+1h"), &clock).await;
    assert!(ev[0].applied, "{ev:?}");
    assert_eq!(
        (ev[0].fault, ev[0].phase),
        (FaultKind::Clock, FaultPhase::Start)
    );
    assert_eq!(ev[0].targets, ["redis"]);
    assert!(
        ev[0].note.contains("redis: its first shifted read after"),
        "{}",
        ev[0].note
    );
    assert!((ahead(addr) - 3600).abs() <= 2, "TIME is not an hour ahead");
    assert_eq!(pttl(addr, "k"), -2, "the key outlived a jump past its life");

    // Heal puts it back.
    let healed = nemesis.apply(&Fault::Heal, &clock).await;
    let stop = healed
        .iter()
        .find(|e| e.fault == FaultKind::Clock)
        .unwrap_or_else(|| panic!("no clock event at heal: {healed:?}"));
    assert!(stop.applied && stop.phase == FaultPhase::Stop, "{stop:?}");
    assert!(ahead(addr).abs() <= 2, "the clock was not put back");

    // Back an hour: a key with five seconds to live has an hour more, until heal.
    assert_eq!(
        redis(addr, &["SET", "b", "v", "PX", "5000"]).unwrap(),
        "+OK"
    );
    let ev = nemesis.apply(&shift("-1h"), &clock).await;
    assert!(ev[0].applied, "{ev:?}");
    assert!(
        (ahead(addr) + 3600).abs() <= 2,
        "TIME is not an hour behind"
    );
    let life = pttl(addr, "b");
    assert!(life > 3_600_000, "the key has {life} ms left an hour back");
    nemesis.apply(&Fault::Heal, &clock).await;
    let life = pttl(addr, "b");
    assert!(
        (0..=5000).contains(&life),
        "the key has {life} ms left after heal"
    );

    // Twice as fast: two seconds later the server is about two seconds ahead.
    let drift = Fault::Clock {
        targets: Targets::All,
        shift: None,
        drift: Some(ClockDrift::parse("+100%").unwrap()),
    };
    let ev = nemesis.apply(&drift, &clock).await;
    assert!(
        ev[0].applied && ev[0].note.contains("drifting +100%"),
        "{ev:?}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let gained = ahead(addr);
    assert!(
        (1..=3).contains(&gained),
        "{gained} s gained in 2 s at +100%"
    );
    nemesis.apply(&Fault::Heal, &clock).await;
    assert!(
        ahead(addr).abs() <= 2,
        "the drifting clock was not put back"
    );

    // A run that crashes with the clock moved (its nemesis gone without a heal): the next
    // fault run's cleanup puts it right.
    assert!(nemesis.apply(&shift("+1h"), &clock).await[0].applied);
    drop(nemesis);
    assert!((ahead(addr) - 3600).abs() <= 2);
    let done = lockbench_chaos::cleanup(&tc.cluster).await.unwrap();
    assert!(
        done.iter()
            .any(|l| l == "put right the wall clock of redis"),
        "{done:?}"
    );
    assert!(ahead(addr).abs() <= 2, "cleanup left the clock moved");

    // etcd reads its clock without the C library: not shifted, and said so.
    let mut etcd = nemesis_of(&tc, ETCD);
    let ev = etcd.apply(&shift("+1h"), &clock).await;
    assert!(!ev[0].applied, "{ev:?}");
    assert!(
        ev[0]
            .note
            .contains("made no clock read through the C library"),
        "{}",
        ev[0].note
    );
    // Nothing left shifted: a later heal has no clock to put back.
    let healed = etcd.apply(&Fault::Heal, &clock).await;
    assert!(
        healed.iter().all(|e| e.fault != FaultKind::Clock),
        "{healed:?}"
    );
}
