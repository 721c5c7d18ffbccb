//! `packet-loss` against a real host: the nemesis's rules drop exactly their share of the
//! datagrams counted end to end (not by the rules' own counters), both ways, and `heal`
//! restores the link. Its own small cluster (`lb-m-`, `10.77.206.0/24`), as in `faults`.

use crate::faults::{nemesis_of, test_cluster};
use lockbench_chaos::{Host, Nemesis};
use lockbench_core::{Fault, LossMode, PartitionSpec, RunClock, Targets};
use lockbench_redis::system::REDIS;
use std::net::Ipv4Addr;

const SENT: u32 = 2000;

/// How many of [`SENT`] datagrams from `from` (`None`: here) reach `to` at `to_addr`.
fn datagrams(from: Option<&Host>, to: Option<&Host>, to_addr: Ipv4Addr) -> u32 {
    lockbench_cluster::udp_delivered(from, to, to_addr, SENT).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_loss_drops_its_share_both_ways_and_heal_restores_the_link() {
    let Some(tc) = test_cluster("m", 206, &[REDIS]).await else {
        return;
    };
    let clock = RunClock::start();
    let spec = lockbench_cluster::by_name("redis").unwrap();
    let redis = tc.net.server_host(spec);
    let me = tc.net.config().bridge_addr();
    let mut nemesis = nemesis_of(&tc, REDIS);
    let loss = |rate, mode| Fault::PacketLoss {
        targets: Targets::Nodes(vec!["redis".into()]),
        rate,
        mode,
    };
    let both = |redis: &Host| {
        let to = tokio::task::block_in_place(|| datagrams(None, Some(redis), redis.addr));
        let back = tokio::task::block_in_place(|| datagrams(Some(redis), None, me));
        (to, back)
    };
    assert_eq!(both(&redis), (SENT, SENT), "a clean link loses nothing");

    // nth: exactly one in four, each way.
    let ev = nemesis.apply(&loss(0.25, LossMode::Nth), &clock).await;
    assert!(ev[0].applied, "{ev:?}");
    assert_eq!(ev[0].targets, vec!["redis"]);
    assert!(ev[0].note.contains("every 4th packet"), "{}", ev[0].note);
    assert_eq!(both(&redis), (SENT * 3 / 4, SENT * 3 / 4));
    let ev = nemesis.apply(&Fault::Heal, &clock).await;
    let stop = ev
        .iter()
        .find(|e| e.fault == lockbench_core::FaultKind::PacketLoss)
        .unwrap();
    assert!(stop.applied, "{ev:?}");
    assert!(
        stop.note.contains("measured over the window's traffic") && stop.note.contains("(25.0%)"),
        "{}",
        stop.note
    );
    assert_eq!(both(&redis), (SENT, SENT), "heal restores the link");
    assert!(!redis.has_firewall_rules(None));

    // random: the kernel's draw, within five standard deviations of 2,000 packets at 0.2.
    let ev = nemesis.apply(&loss(0.2, LossMode::Random), &clock).await;
    assert!(ev[0].applied, "{ev:?}");
    let (to, back) = both(&redis);
    let sd = (f64::from(SENT) * 0.2 * 0.8).sqrt();
    for got in [to, back] {
        let lost = f64::from(SENT - got);
        assert!(
            (lost - 0.2 * f64::from(SENT)).abs() < 5.0 * sd,
            "lost {lost} of {SENT}"
        );
    }
    nemesis.apply(&Fault::Heal, &clock).await;

    // The check is alive: behind a partition no probe reaches the loss rules, so the fault
    // is not applied, its rules are removed, and the partition's stay.
    let isolate = Fault::Partition {
        split: PartitionSpec::Isolate(Targets::Nodes(vec!["redis".into()])),
    };
    assert!(nemesis.apply(&isolate, &clock).await[0].applied);
    let ev = nemesis.apply(&loss(0.25, LossMode::Nth), &clock).await;
    assert!(
        !ev[0].applied && ev[0].note.contains("NOT APPLIED"),
        "{ev:?}"
    );
    assert!(
        redis.has_firewall_rules(Some("INPUT")),
        "the partition's rules stay"
    );
    assert!(
        !redis.has_firewall_rules(Some("OUTPUT")),
        "the loss rules are gone"
    );
    nemesis.heal_all(&clock).await;
    assert!(!redis.has_firewall_rules(None));
    tc.finish().await;
}
