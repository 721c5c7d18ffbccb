//! The ZooKeeper recipes as a digest user under a chroot whose ACL admits only that user, and the
//! misconfigurations a digest user meets (a wrong password, a missing permission), each failing in
//! under 2 s naming the ensemble, the setting and the fix.
//!
//! Each test starts a standalone ZooKeeper of its own (Debian's `zookeeper.jar`, as the managed
//! ensemble runs) on a free loopback port, has `lockbench_zookeeper::secure::set_up` create the
//! chroot with the user's ACL, and stops the server when it ends.

use crate::standalone::{Server, start};
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{TestDir, assert_clear, export, test_dir};
use lockbench_core::{Backend, Connection, Endpoints};
use lockbench_zookeeper::{ZkCurator, ZkFair, ZookeeperKnobs};
use secrecy::SecretString;
use std::time::{Duration, Instant};
use zookeeper_client as zk;

const CHROOT: &str = "/team";

/// A server of test `test` whose chroot [`CHROOT`] only digest user `lockbench` may use, and the
/// settings a user writes for it (the password exported in a variable of the test's own).
struct Secured {
    server: Server,
    password: String,
    settings: Connection,
    /// Last: removed after the server has stopped.
    _dir: TestDir,
}

async fn secured(test: &str) -> Secured {
    let dir = test_dir("zookeeper", test);
    let server = start(&dir, None);
    let password = format!("pw-{test}-{}-Xq7", std::process::id());
    let secret = SecretString::from(password.clone());
    lockbench_zookeeper::secure::set_up(&address(&server), None, CHROOT, "lockbench", &secret)
        .await
        .unwrap();
    let var = format!(
        "LB_TEST_ZK_SECURE_{}",
        test.to_uppercase().replace('-', "_")
    );
    export(&var, &password);
    let mut settings = Connection {
        user: Some("lockbench".into()),
        password_env: Some(var),
        ..Connection::default()
    };
    settings.system.insert("chroot".into(), CHROOT.into());
    Secured {
        server,
        password,
        settings,
        _dir: dir,
    }
}

fn address(server: &Server) -> String {
    server.address()
}

fn endpoints(server: &Server, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set("zookeeper", vec![address(server)]);
    e.set_connection("zookeeper", connection);
    e
}

fn knobs() -> ZookeeperKnobs {
    ZookeeperKnobs {
        session_timeout: Duration::from_secs(4),
        root: "/lockbench".into(),
    }
}

/// zk-fair and zk-curator as digest user `lockbench` under a chroot only it may use: the
/// pre-run check passes, the contract holds, the lock directories carry the user's digest
/// ACL, and a session without the user may not even list them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_as_a_digest_user_under_its_own_chroot() {
    let s = secured("recipes").await;
    let e = endpoints(&s.server, s.settings.clone());
    let fair = ZkFair::new(&e, &knobs(), 4, 1).unwrap();
    fair.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&fair).await;
    conformance::mutual_exclusion(&fair, 3, 5).await;
    let curator = ZkCurator::new(&e, &knobs(), 4, 1).unwrap();
    curator.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&curator).await;
    assert!(!format!("{fair:?}{curator:?}").contains(&s.password));

    let credentials = format!("lockbench:{}", s.password);
    let user = zk::Client::connector()
        .with_auth("digest", credentials.as_bytes())
        .connect(&address(&s.server))
        .await
        .unwrap();
    let (acls, _) = user
        .get_acl(&format!("{CHROOT}/lockbench/fair"))
        .await
        .unwrap();
    assert!(
        acls.iter()
            .all(|a| a.scheme() == "digest" && a.id().starts_with("lockbench:")),
        "{acls:?}"
    );
    let anonymous = zk::Client::connector()
        .connect(&address(&s.server))
        .await
        .unwrap();
    let listed = anonymous
        .list_children(&format!("{CHROOT}/lockbench/fair"))
        .await;
    assert_eq!(listed.unwrap_err(), zk::Error::NoAuth);
}

/// A wrong password: ZooKeeper accepts it at `addauth` and refuses at the chroot; the pre-run
/// check names the user, the node, the permission and the password's source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let s = secured("wrong-pw").await;
    let wrong = format!("{}-not", s.password);
    let var = "LB_TEST_ZK_SECURE_WRONG_PW_GIVEN";
    export(var, &wrong);
    let mut connection = s.settings.clone();
    connection.password_env = Some(var.into());
    let fair = ZkFair::new(&endpoints(&s.server, connection), &knobs(), 4, 1).unwrap();
    let t0 = Instant::now();
    let err = fair.check_servers().await.unwrap_err().to_string();
    let wants = [
        "NoAuth",
        "`lockbench`",
        "zookeeper.password_env",
        "CREATE",
        "`/team`",
    ];
    assert_clear(&err, t0.elapsed(), &address(&s.server), &wants, &wrong);
    assert!(!err.contains(&s.password), "{err}");
}

/// A chroot whose ACL gives the user READ only: the pre-run check names CREATE and the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_permission_is_named() {
    let s = secured("no-perm").await;
    let credentials = format!("lockbench:{}", s.password);
    let admin = zk::Client::connector()
        .with_auth("digest", credentials.as_bytes())
        .connect(&address(&s.server))
        .await
        .unwrap();
    let read_only = [zk::Acl::new(zk::Permission::READ, zk::AuthId::authed())];
    admin
        .set_acl(CHROOT, &zk::Acls::new(&read_only), None)
        .await
        .unwrap();
    let fair = ZkFair::new(&endpoints(&s.server, s.settings.clone()), &knobs(), 4, 1).unwrap();
    let t0 = Instant::now();
    let err = fair.check_servers().await.unwrap_err().to_string();
    let wants = [
        "NoAuth",
        "`lockbench`",
        "may not CREATE",
        "`/team`",
        "setAcl",
    ];
    assert_clear(&err, t0.elapsed(), &address(&s.server), &wants, &s.password);
}
