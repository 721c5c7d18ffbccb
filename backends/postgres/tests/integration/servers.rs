//! The PostgreSQL pair as the managed cluster runs it: started, health-checked (roles and
//! version in the status), killed, paused and failed over by promotion through the chaos
//! crate's server nemesis, and whole again afterwards (the replica streams: a row written on
//! the primary shows up on it).
//!
//! Each test brings up its own pair in its own state directory, namespace prefix and subnet
//! (`lb-pg<x>-`, `10.85.<n>.0/24`), so it can kill and promote freely while other tests use
//! the shared managed cluster, and tears it down at the end. They need root (network
//! namespaces; and root is what makes PostgreSQL's refusal to run as root matter): CI runs as
//! root, so they never skip there; without root they FAIL saying why, unless
//! `LOCKBENCH_ALLOW_NO_ROOT=1`.

use lockbench_chaos::{Nemesis, ServerNemesis};
use lockbench_cluster::{Cluster, PrivateCluster};
use lockbench_conformance::faults::applied;
use lockbench_core::{Fault, FaultKind, FaultPhase, RunClock, Targets};
use lockbench_postgres::system::POSTGRES;
use rand::SeedableRng;
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

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
    PrivateCluster::start(tag, subnet, &[POSTGRES])
        .await
        .map(Pair)
}

impl Pair {
    fn nemesis(&self) -> ServerNemesis {
        ServerNemesis::new(
            self.cluster.clone(),
            POSTGRES,
            rand_chacha::ChaCha8Rng::seed_from_u64(7),
        )
    }

    /// Each server's role, from the status (`pg1=primary`, ...), healthy ones only.
    async fn roles(&self) -> Vec<String> {
        self.cluster.status().await.unwrap().healthy_roles()
    }

    /// Waits until both are healthy, then checks their roles.
    async fn whole(&self, primary: &str, replica: &str) {
        self.cluster
            .wait_healthy(&["pg1", "pg2"], Duration::from_secs(90))
            .await
            .unwrap_or_else(|e| panic!("{e:#}; logs:\n{}", self.logs()));
        assert_eq!(
            self.roles().await,
            [format!("{primary}=primary"), format!("{replica}=replica")]
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
        );
        self.replicates(primary, replica).await;
    }

    fn addr(&self, name: &str) -> String {
        let spec = lockbench_cluster::by_name(name).unwrap();
        let addr = self.cluster.topology().client_addr(spec);
        format!(
            "host={} port={} user=postgres dbname=lockbench connect_timeout=3",
            addr.ip(),
            addr.port()
        )
    }

    async fn connect(&self, name: &str) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.addr(name), NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to {name}: {e}"));
        tokio::spawn(conn);
        client
    }

    /// A row written on `primary` reaches `replica` (it streams), within 20 s.
    async fn replicates(&self, primary: &str, replica: &str) {
        let mark = format!("{primary}->{replica}@{:?}", Instant::now());
        let p = self.connect(primary).await;
        p.batch_execute("CREATE TABLE IF NOT EXISTS marks (v text)")
            .await
            .unwrap();
        p.execute("INSERT INTO marks VALUES ($1)", &[&mark])
            .await
            .unwrap();
        let r = self.connect(replica).await;
        let start = Instant::now();
        loop {
            let n: i64 = r
                .query_one("SELECT count(*) FROM marks WHERE v = $1", &[&mark])
                .await
                .map(|row| row.get(0))
                .unwrap_or(0);
            if n == 1 {
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
        self.log_tails(&["pg1", "pg2"], 15)
    }
}

#[tokio::test]
async fn the_pair_starts_as_a_primary_and_a_streaming_replica() {
    let Some(p) = pair("pgs", "10.85.1.0/24").await else {
        return;
    };
    let status = p.cluster.status().await.unwrap();
    assert_eq!(status.healthy_roles(), ["pg1=primary", "pg2=replica"]);
    assert_eq!(
        status.endpoints.get(lockbench_postgres::POSTGRES),
        ["10.85.1.50:5432", "10.85.1.51:5432"]
    );
    for s in &status.servers {
        let data = s.log.parent().unwrap().join("data");
        assert!(
            data.join("PG_VERSION").is_file(),
            "{}: no data directory",
            data.display()
        );
        assert!(s.pid.is_some() && s.rss_bytes.is_some(), "{s:?}");
    }
    let versions = lockbench_cluster::server_versions(&status.endpoints).await;
    let v = versions
        .get("postgres")
        .expect("the servers name a version");
    assert!(v.starts_with("15."), "version {v}");
    // The database and extension the recipes' counters need.
    let client = p.connect("pg1").await;
    let ext: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ext, 1);
    client
        .query("SELECT calls FROM pg_stat_statements LIMIT 1", &[])
        .await
        .expect("pg_stat_statements is preloaded");
    p.replicates("pg1", "pg2").await;
}

#[tokio::test]
async fn a_killed_primary_and_a_killed_replica_come_back_whole() {
    let Some(p) = pair("pgk", "10.85.2.0/24").await else {
        return;
    };
    let clock = RunClock::start();
    let mut n = p.nemesis();
    for (targets, name) in [(Targets::Leader, "pg1"), (Targets::Followers, "pg2")] {
        let kill = n.apply(&Fault::Kill { targets }, &clock).await;
        let e = applied(&kill, FaultKind::Kill, FaultPhase::Start);
        assert_eq!(e.targets, [name]);
        assert!(p.cluster.server_pid(name).is_none(), "{name} still runs");
        let start = n
            .apply(
                &Fault::Start {
                    targets: Targets::All,
                },
                &clock,
            )
            .await;
        applied(&start, FaultKind::Kill, FaultPhase::Stop);
        let back = Instant::now();
        p.whole("pg1", "pg2").await;
        eprintln!(
            "{name} killed: the pair was whole {:?} after the restart",
            back.elapsed()
        );
    }
}

#[tokio::test]
async fn a_paused_primary_stops_its_open_sessions_too() {
    let Some(p) = pair("pgp", "10.85.3.0/24").await else {
        return;
    };
    let session = p.connect("pg1").await;
    session.simple_query("SELECT 1").await.unwrap();
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
    assert_eq!(e.targets, ["pg1"]);
    // The session's backend is a child of the postmaster: paused with it, it cannot answer.
    let during = tokio::time::timeout(Duration::from_secs(2), session.simple_query("SELECT 1"));
    assert!(
        during.await.is_err(),
        "an open session answered while its server was paused ({})",
        e.note
    );
    let resume = n
        .apply(
            &Fault::Resume {
                targets: Targets::All,
            },
            &clock,
        )
        .await;
    applied(&resume, FaultKind::Pause, FaultPhase::Stop);
    tokio::time::timeout(Duration::from_secs(10), session.simple_query("SELECT 1"))
        .await
        .expect("the session answers after resume")
        .unwrap();
    p.whole("pg1", "pg2").await;
}

#[tokio::test]
async fn promote_fails_over_and_heal_rebuilds_the_pair() {
    let Some(p) = pair("pgf", "10.85.4.0/24").await else {
        return;
    };
    let clock = RunClock::start();
    let mut n = p.nemesis();
    // Twice: pg2 takes over, then pg1 again, each time with the former primary rejoining.
    for (old, new) in [("pg1", "pg2"), ("pg2", "pg1")] {
        let events = n.apply(&Fault::Promote, &clock).await;
        let e = applied(&events, FaultKind::Promote, FaultPhase::Start);
        assert_eq!(e.targets, [new], "{e:#?}");
        assert!(p.cluster.server_pid(old).is_none(), "{old} still runs");
        // The promoted server says it is no longer in recovery.
        let promoted = p.connect(new).await;
        let recovery: bool = promoted
            .query_one("SELECT pg_is_in_recovery()", &[])
            .await
            .unwrap()
            .get(0);
        assert!(!recovery, "{new} is still in recovery after: {}", e.note);
        assert_eq!(p.roles().await, [format!("{new}=primary")]);
        let heal = n.apply(&Fault::Heal, &clock).await;
        let h = applied(&heal, FaultKind::Promote, FaultPhase::Stop);
        assert_eq!(h.targets, [new]);
        eprintln!("promote: {}\nheal: {}", e.note, h.note);
        p.whole(new, old).await;
    }
}

#[tokio::test]
async fn promote_is_refused_where_nothing_can_be_promoted() {
    // A system without System::promote: the standalone Redis server. Nothing is killed.
    let clock = RunClock::start();
    let cluster = Cluster::new(std::env::temp_dir().join("lockbench-postgres-none"));
    let mut n = ServerNemesis::new(
        cluster,
        lockbench_redis::system::REDIS,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
    );
    let events = n.apply(&Fault::Promote, &clock).await;
    assert_eq!(events.len(), 1);
    assert!(!events[0].applied);
    assert!(events[0].note.contains("has no promotion"), "{events:?}");
}
