//! ZooKeeper over TLS and mutual TLS: the recipes, the election, the observer and
//! the `mntr` request counter through a secure client port as a digest user under a chroot,
//! and each TLS misconfiguration failing in under 2 s naming the member, the setting and the
//! fix.
//!
//! Each test starts a standalone ZooKeeper of its own ([`crate::standalone`]) with a plaintext
//! port and a TLS port (Netty, client certificates required, the project's certificates from
//! `lockbench-certs`), and stops it when it ends. Every wait is bounded: the server start (30
//! s), each connect (the recipes' own budget), the error cases (asserted under 2 s).

use crate::standalone::{self, Server};
use lockbench_certs::Pki;
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{TestDir, assert_clear, export, test_dir};
use lockbench_core::traits::BackendError;
use lockbench_core::{Backend, ClientId, Connection, Endpoints, Tls};
use lockbench_zookeeper::{ZkCurator, ZkElection, ZkFair, ZookeeperKnobs};
use secrecy::SecretString;
use std::time::{Duration, Instant};

const CHROOT: &str = "/team";

/// What the error cases (which use no password) check is not shown.
const NO_SECRET: &str = "no password in this test";

/// A server with a TLS port whose certificates are in `pki`, and the test's directory.
struct Secured {
    server: Server,
    pki: Pki,
    expired: lockbench_certs::ClientCert,
    dir: TestDir,
}

fn secured(test: &str) -> Secured {
    let dir = test_dir("zookeeper-tls", test);
    let certs = dir.join("certs");
    let (pki, expired) = Pki::ensure_with_expired_client(&certs, &["127.0.0.1"]).unwrap();
    let keystore = certs.join("server-keystore.pem");
    let mut text = std::fs::read_to_string(&pki.server_key).unwrap();
    text.push_str(&std::fs::read_to_string(&pki.server_cert).unwrap());
    std::fs::write(&keystore, text).unwrap();
    let tls = standalone::Tls {
        ca: pki.ca.clone(),
        keystore,
    };
    let server = standalone::start(&dir, Some(&tls));
    Secured {
        server,
        pki,
        expired,
        dir,
    }
}

/// Mutual TLS with `pki`'s CA and client certificate.
fn mutual(pki: &Pki) -> Tls {
    Tls {
        ca: Some(pki.ca.clone()),
        cert: Some(pki.client_cert.clone()),
        key: Some(pki.client_key.clone()),
        server_name: None,
    }
}

fn endpoints(address: String, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set("zookeeper", vec![address]);
    e.set_connection("zookeeper", connection);
    e
}

fn tls_only(tls: Tls) -> Connection {
    Connection {
        tls: Some(tls),
        ..Connection::default()
    }
}

fn knobs() -> ZookeeperKnobs {
    ZookeeperKnobs {
        session_timeout: Duration::from_secs(4),
        root: "/lockbench".into(),
    }
}

/// What a client's first connect says with `connection` to `address`, and how long it took.
async fn connect_error(address: String, connection: Connection) -> (String, Duration) {
    let fair = ZkFair::new(&endpoints(address, connection), &knobs(), 4, 1).unwrap();
    let t0 = Instant::now();
    let err = match fair.connect(ClientId(1)).await {
        Ok(_) => panic!("connected"),
        Err(e) => e,
    };
    assert!(matches!(err, BackendError::Unreachable { .. }), "{err:?}");
    (err.to_string(), t0.elapsed())
}

/// zk-fair, zk-curator, the election, the observer and the `mntr` counter over mutual TLS as a
/// digest user under a chroot only it may use; results would record TLS, mutual TLS and auth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_over_mutual_tls_as_a_digest_user() {
    let s = secured("recipes");
    let password = format!("pw-tls-{}-Zr4", std::process::id());
    let secret = SecretString::from(password.clone());
    let tls = mutual(&s.pki);
    lockbench_zookeeper::secure::set_up(
        &s.server.secure_address(),
        Some(&tls),
        CHROOT,
        "lockbench",
        &secret,
    )
    .await
    .unwrap();
    let var = "LB_TEST_ZK_TLS_RECIPES";
    export(var, &password);
    let mut connection = Connection {
        tls: Some(tls),
        user: Some("lockbench".into()),
        password_env: Some(var.into()),
        ..Connection::default()
    };
    connection.system.insert("chroot".into(), CHROOT.into());
    let e = endpoints(s.server.secure_address(), connection);
    let summary = e.summaries();
    let zk = &summary["zookeeper"];
    assert!(zk.tls && zk.mutual_tls && zk.auth, "{zk:?}");

    let fair = ZkFair::new(&e, &knobs(), 4, 1).unwrap();
    fair.check_servers().await.unwrap();
    let before = fair.server_counters().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&fair).await;
    conformance::mutual_exclusion(&fair, 3, 5).await;
    conformance::observer_names_the_holder(&fair).await;
    let after = fair.server_counters().await.unwrap();
    assert!(after.requests > before.requests, "{before:?} {after:?}");

    let curator = ZkCurator::new(&e, &knobs(), 4, 1).unwrap();
    curator.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&curator).await;

    let election = ZkElection::new(&e, &knobs(), "tls").unwrap();
    conformance::election::resign_hands_over(&election, knobs().session_timeout).await;
    assert!(!format!("{fair:?}{curator:?}").contains(&password));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named() {
    let s = secured("wrong-ca");
    let other = Pki::ensure(&s.dir.join("other"), &["127.0.0.1"]).unwrap();
    let tls = Tls {
        ca: Some(other.ca.clone()),
        ..mutual(&s.pki)
    };
    let (err, took) = connect_error(s.server.secure_address(), tls_only(tls)).await;
    let wants = [
        "certificate signed by unknown authority",
        "zookeeper.tls.ca",
        &other.ca.display().to_string(),
    ];
    assert_clear(&err, took, &s.server.secure_address(), &wants, NO_SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_the_plaintext_port_is_named() {
    let s = secured("tls-on-plain");
    let (err, took) = connect_error(s.server.address(), tls_only(mutual(&s.pki))).await;
    let wants = ["does not speak TLS on this port", "secureClientPort"];
    assert_clear(&err, took, &s.server.address(), &wants, NO_SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_the_tls_port_is_named() {
    let s = secured("plain-on-tls");
    let (err, took) = connect_error(s.server.secure_address(), Connection::default()).await;
    let wants = ["this port serves TLS", "set `zookeeper.tls`"];
    assert_clear(&err, took, &s.server.secure_address(), &wants, NO_SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_of_another_ca_is_named() {
    let s = secured("other-ca-client");
    let other = Pki::ensure(&s.dir.join("other"), &["127.0.0.1"]).unwrap();
    let tls = Tls {
        cert: Some(other.client_cert.clone()),
        key: Some(other.client_key.clone()),
        ..mutual(&s.pki)
    };
    let (err, took) = connect_error(s.server.secure_address(), tls_only(tls)).await;
    let wants = [
        "refused the client certificate",
        "zookeeper.tls.cert",
        &other.client_cert.display().to_string(),
    ];
    assert_clear(&err, took, &s.server.secure_address(), &wants, NO_SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_client_certificate_is_named() {
    let s = secured("expired-client");
    let tls = Tls {
        cert: Some(s.expired.cert.clone()),
        key: Some(s.expired.key.clone()),
        ..mutual(&s.pki)
    };
    let (err, took) = connect_error(s.server.secure_address(), tls_only(tls)).await;
    let wants = [
        "refused the client certificate",
        "expired",
        &s.expired.cert.display().to_string(),
    ];
    assert_clear(&err, took, &s.server.secure_address(), &wants, NO_SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_name_the_certificate_lacks_is_named() {
    let s = secured("server-name");
    let tls = Tls {
        server_name: Some("zk.other.example".into()),
        ..mutual(&s.pki)
    };
    let (err, took) = connect_error(s.server.secure_address(), tls_only(tls)).await;
    let wants = [
        "does not name `zk.other.example`",
        "zookeeper.tls.server_name",
    ];
    assert_clear(&err, took, &s.server.secure_address(), &wants, NO_SECRET);
    // A name the certificate carries connects, though it is not the address's host.
    let tls = Tls {
        server_name: Some("localhost".into()),
        ..mutual(&s.pki)
    };
    let fair = ZkFair::new(
        &endpoints(s.server.secure_address(), tls_only(tls)),
        &knobs(),
        4,
        1,
    )
    .unwrap();
    conformance::acquire_release_and_tokens_grow(&fair).await;
}
