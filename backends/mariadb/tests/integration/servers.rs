//! The MariaDB pair as the managed cluster runs it: started, health-checked (roles and version
//! in the status), killed, paused and failed over by promotion through the chaos crate's
//! server nemesis, and whole again afterwards (the replica replicates: a row written on the
//! primary shows up on it).
//!
//! Each test brings up its own pair in its own state directory, namespace prefix and subnet
//! (`lb-ma<x>-`, `10.87.<n>.0/24`), so it can kill and promote freely while other tests use
//! the shared managed cluster, and tears it down at the end. They need root (network
//! namespaces): CI runs as root, so they never skip there; without root they FAIL saying why,
//! unless `LOCKBENCH_ALLOW_NO_ROOT=1`.

use lockbench_chaos::{Nemesis, ServerNemesis};
use lockbench_cluster::PrivateCluster;
use lockbench_conformance::faults::applied;
use lockbench_core::{Fault, FaultKind, FaultPhase, RunClock, Targets};
use lockbench_mariadb::system::MARIADB;
use mysql_async::prelude::Queryable;
use rand::SeedableRng;
use std::time::{Duration, Instant};

/// A private pair, stopped (and its network removed) when dropped.
struct Pair(PrivateCluster);

impl std::ops::Deref for Pair {
    type Target = PrivateCluster;
    fn deref(&self) -> &PrivateCluster {
        &self.0
    }
}

/// `None` only when not root and `LOCKBENCH_ALLOW_NO_ROOT=1`.
async fn pair(tag: &str, subnet: &str) -> Option<Pair> {
    PrivateCluster::start(tag, subnet, &[MARIADB])
        .await
        .map(Pair)
}

impl Pair {
    fn nemesis(&self) -> ServerNemesis {
        ServerNemesis::new(
            self.cluster.clone(),
            MARIADB,
            rand_chacha::ChaCha8Rng::seed_from_u64(7),
        )
    }

    /// Each healthy server's role, from the status (`maria1=primary`, ...).
    async fn roles(&self) -> Vec<String> {
        self.cluster.status().await.unwrap().healthy_roles()
    }

    /// Waits until both are healthy, then checks their roles and that the replica replicates.
    async fn whole(&self, primary: &str, replica: &str) {
        self.cluster
            .wait_healthy(&["maria1", "maria2"], Duration::from_secs(90))
            .await
            .unwrap_or_else(|e| panic!("{e:#}; logs:\n{}", self.logs()));
        let mut want = vec![format!("{primary}=primary"), format!("{replica}=replica")];
        want.sort();
        assert_eq!(self.roles().await, want);
        self.replicates(primary, replica).await;
    }

    async fn connect(&self, name: &str) -> mysql_async::Conn {
        let spec = lockbench_cluster::by_name(name).unwrap();
        let addr = self.cluster.topology().client_addr(spec);
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(addr.ip().to_string())
            .tcp_port(addr.port())
            .prefer_socket(false)
            .user(Some(lockbench_mariadb::server::USER))
            .db_name(Some(lockbench_mariadb::server::DATABASE));
        mysql_async::Conn::new(opts)
            .await
            .unwrap_or_else(|e| panic!("connect to {name}: {e}"))
    }

    /// A row written on `primary` reaches `replica`, within 20 s.
    async fn replicates(&self, primary: &str, replica: &str) {
        let mark = format!("{primary}->{replica}@{:?}", Instant::now());
        let mut p = self.connect(primary).await;
        p.query_drop("CREATE TABLE IF NOT EXISTS lockbench.marks (v varchar(100))")
            .await
            .unwrap();
        p.exec_drop("INSERT INTO lockbench.marks VALUES (?)", (&mark,))
            .await
            .unwrap();
        let mut r = self.connect(replica).await;
        let start = Instant::now();
        loop {
            let n: Option<i64> = r
                .exec_first("SELECT COUNT(*) FROM lockbench.marks WHERE v = ?", (&mark,))
                .await
                .unwrap_or(None);
            if n == Some(1) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{mark} did not reach {replica}; logs:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn logs(&self) -> String {
        self.log_tails(&["maria1", "maria2"], 15)
    }
}

/// The pair starts as a primary and its replica, names its version, and fails over by
/// promotion twice (maria2 takes over, then maria1 again), the former primary rejoining each
/// time as the new one's replica with everything the new primary has.
#[tokio::test]
async fn the_pair_starts_whole_and_promote_fails_over_and_heal_rebuilds_it() {
    let Some(p) = pair("maf", "10.87.1.0/24").await else {
        return;
    };
    let status = p.cluster.status().await.unwrap();
    assert_eq!(status.healthy_roles(), ["maria1=primary", "maria2=replica"]);
    assert_eq!(
        status.endpoints.get(lockbench_mariadb::MARIADB),
        ["10.87.1.70:3306", "10.87.1.71:3306"]
    );
    let versions = lockbench_cluster::server_versions(&status.endpoints).await;
    let v = versions.get("mariadb").expect("the servers name a version");
    assert!(v.starts_with("10.11."), "version {v}");
    p.replicates("maria1", "maria2").await;

    let clock = RunClock::start();
    let mut n = p.nemesis();
    for (old, new) in [("maria1", "maria2"), ("maria2", "maria1")] {
        let events = n.apply(&Fault::Promote, &clock).await;
        let e = applied(&events, FaultKind::Promote, FaultPhase::Start);
        assert_eq!(e.targets, [new], "{e:#?}");
        assert!(p.cluster.server_pid(old).is_none(), "{old} still runs");
        let mut promoted = p.connect(new).await;
        let read_only: Option<u8> = promoted.query_first("SELECT @@read_only").await.unwrap();
        assert_eq!(
            read_only,
            Some(0),
            "{new} is still read-only after: {}",
            e.note
        );
        assert_eq!(p.roles().await, [format!("{new}=primary")]);
        let heal = n.apply(&Fault::Heal, &clock).await;
        let h = applied(&heal, FaultKind::Promote, FaultPhase::Stop);
        assert_eq!(h.targets, [new]);
        eprintln!("promote: {}\nheal: {}", e.note, h.note);
        p.whole(new, old).await;
    }
}

/// A paused primary stops answering its open sessions; a killed replica comes back and
/// catches up.
#[tokio::test]
async fn a_paused_primary_and_a_killed_replica_come_back_whole() {
    let Some(p) = pair("map", "10.87.2.0/24").await else {
        return;
    };
    let mut session = p.connect("maria1").await;
    session.query_drop("SELECT 1").await.unwrap();
    let clock = RunClock::start();
    let mut n = p.nemesis();
    let pause = n
        .apply(
            &Fault::Pause {
                targets: Targets::Leader,
            },
            &clock,
        )
        .await;
    let e = applied(&pause, FaultKind::Pause, FaultPhase::Start);
    assert_eq!(e.targets, ["maria1"]);
    assert!(e.note.contains("every thread stopped"), "{}", e.note);
    // No answer: the query times out (or its connection fails), it never succeeds.
    let during = tokio::time::timeout(Duration::from_secs(2), session.query_drop("SELECT 1"));
    if let Ok(Ok(())) = during.await {
        let pid = p.cluster.server_pid("maria1");
        let stat = pid.map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")));
        panic!(
            "an open session answered while its server was paused ({}); maria1's pid now \
             {pid:?}, its /proc stat {stat:?}",
            e.note
        );
    }
    let resume = n
        .apply(
            &Fault::Resume {
                targets: Targets::All,
            },
            &clock,
        )
        .await;
    applied(&resume, FaultKind::Pause, FaultPhase::Stop);
    p.whole("maria1", "maria2").await;

    let kill = n
        .apply(
            &Fault::Kill {
                targets: Targets::Followers,
            },
            &clock,
        )
        .await;
    let e = applied(&kill, FaultKind::Kill, FaultPhase::Start);
    assert_eq!(e.targets, ["maria2"]);
    let start = n
        .apply(
            &Fault::Start {
                targets: Targets::All,
            },
            &clock,
        )
        .await;
    applied(&start, FaultKind::Kill, FaultPhase::Stop);
    p.whole("maria1", "maria2").await;
}
