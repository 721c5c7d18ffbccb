//! The MariaDB recipes against a real MariaDB that takes only TLS with a client certificate
//! and a password, started exactly as the secure managed cluster starts its primary
//! (`lockbench_mariadb::server::launch` with a [`Secure`]: `require-secure-transport`, the
//! accounts of `lockbench_mariadb::secure`), and the misconfigurations a user meets first,
//! each failing in under 2 s naming the server, the setting and the fix, never the password.
//!
//! Each test starts a server of its own (`start-mariadb.sh`: `mariadb-install-db`, then
//! `mariadbd`) on a free loopback port, with certificates from `lockbench-certs` in a
//! directory of its own, and stops it when it ends. The peer the script asks about is a free
//! port nobody listens on, so the server starts as the primary.

use lockbench_certs::Pki;
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{TestDir, assert_clear, export, start_first_member, test_dir};
use lockbench_core::launch::Secure;
use lockbench_core::{
    Backend, ClientId, Connection, Endpoints, KeyId, LockClient, Outcome, System, Tls,
};
use lockbench_mariadb::system::Mariadb;
use lockbench_mariadb::{MARIADB, MariaBackend, MariaRecipe, MariadbKnobs};
use mysql_async::prelude::Queryable;
use std::process::Child;
use std::time::{Duration, Instant};

/// A real MariaDB primary, killed on drop (before its directory goes).
struct Server {
    child: Child,
    port: u16,
    _dir: TestDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test's password for lockbench's user (the administrator's is derived from it).
fn password(test: &str) -> String {
    format!("pw-{test}-{}-Qz4", std::process::id())
}

/// Starts maria1 in `dir` (secure when `secure` is given) and waits until it answers.
async fn start(dir: TestDir, secure: Option<&Secure>) -> Server {
    let (child, port) = start_first_member(&Mariadb, &dir, secure);
    let log = dir.join("log");
    let server = Server {
        child,
        port,
        _dir: dir,
    };
    // Listening: a plain probe is answered by a plain server and refused by a secure one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let check = Mariadb.health_check(&format!("127.0.0.1:{}", server.port));
    while lockbench_cluster::exchange(&check)
        .await
        .map_or(true, |r| r.is_empty())
    {
        if Instant::now() > deadline {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("mariadb did not start within 60 s; its output:\n{said}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

/// The settings a user writes: TLS with the CA and the client certificate, user `lockbench`,
/// the password in environment variable `var`.
fn settings(pki: &Pki, var: &str) -> Connection {
    let [ca, cert, key] = [&pki.ca, &pki.client_cert, &pki.client_key].map(|p| Some(p.clone()));
    Connection {
        tls: Some(Tls {
            server_name: None,
            ca,
            cert,
            key,
        }),
        user: Some("lockbench".into()),
        password_env: Some(var.into()),
        ..Connection::default()
    }
}

fn endpoints(port: u16, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set(MARIADB, vec![format!("127.0.0.1:{port}")]);
    e.set_connection(MARIADB, connection);
    e
}

/// A secure server of test `test`: its directory's certificates and the password.
async fn secure_server(test: &str) -> (Server, Pki, String) {
    let dir = test_dir("mariadb", test);
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password(test);
    let profile = Secure::in_dir(
        &dir.join("certs"),
        "lockbench",
        pw.clone().into(),
        format!("{pw}-admin").into(),
    );
    let server = start(dir, Some(&profile)).await;
    (server, pki, pw)
}

/// `mariadb-get-lock` at `port` with `connection` fails to connect, clearly (`wants`), in
/// time, naming the server and never `secret`.
async fn refused(port: u16, connection: Connection, wants: &[&str], secret: &str) {
    let e = endpoints(port, connection);
    let b = MariaBackend::new(MariaRecipe::GetLock, &e, &MariadbKnobs::default(), 1).unwrap();
    let t0 = Instant::now();
    let err = match b.connect(ClientId(0)).await {
        Err(e) => e.to_string(),
        Ok(c) => {
            c.close().await;
            panic!("the misconfigured client connected")
        }
    };
    assert_clear(
        &err,
        t0.elapsed(),
        &format!("127.0.0.1:{port}"),
        wants,
        secret,
    );
}

/// `mariadb-get-lock` over mutual TLS with a password as `lockbench`: the contract, the
/// counters and the observer (read as that user), the user's privileges no more than it
/// needs, and the cluster's own probe (TLS after the greeting, the administrator's login)
/// reads the server as the primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_locks_over_mutual_tls_with_a_password() {
    let (server, pki, pw) = secure_server("locks").await;
    export("LB_TEST_MARIADB_SECURE_LOCKS", &pw);
    let e = endpoints(server.port, settings(&pki, "LB_TEST_MARIADB_SECURE_LOCKS"));
    let b = MariaBackend::new(MariaRecipe::GetLock, &e, &MariadbKnobs::default(), 1).unwrap();
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 3, 5).await;
    conformance::observer_names_the_holder(&b).await;

    let before = b.server_counters().await.unwrap();
    let mut c = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(1)).await else {
        panic!("acquire over TLS")
    };
    assert!(c.release(g).await.is_ok());
    let sent = c.requests_sent().unwrap();
    c.close().await;
    let after = b.server_counters().await.unwrap();
    assert_eq!(after.requests - before.requests, sent, "{}", after.source);
    assert!(
        !format!("{b:?}").contains(&pw),
        "the Debug shows the password"
    );

    // Least privilege: lockbench may not write elsewhere nor administer the server.
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(server.port)
        .prefer_socket(false)
        .user(Some("lockbench"))
        .pass(Some(pw.clone()))
        .ssl_opts(Some(
            mysql_async::SslOpts::default()
                .with_root_certs(vec![pki.ca.clone().into()])
                .with_client_identity(Some(mysql_async::ClientIdentity::new(
                    pki.client_cert.clone().into(),
                    pki.client_key.clone().into(),
                ))),
        ));
    let mut conn = mysql_async::Conn::new(opts).await.unwrap();
    for denied in [
        "CREATE TABLE lockbench.denied (x int)",
        "SET GLOBAL read_only = 1",
        "SELECT user FROM mysql.user",
    ] {
        let e = conn.query_drop(denied).await.unwrap_err();
        assert!(
            matches!(&e, mysql_async::Error::Server(s) if [1044, 1142, 1227].contains(&s.code)),
            "{denied}: {e}"
        );
    }
    conn.disconnect().await.unwrap();

    // The cluster's probe of a secure server.
    let profile_tls = Tls {
        ca: Some(pki.ca.clone()),
        cert: Some(pki.server_cert.clone()),
        key: Some(pki.server_key.clone()),
        server_name: None,
    };
    let probe_config = lockbench_core::crypto::client_config("secure", &profile_tls).unwrap();
    let check = Mariadb.health_check(&format!("127.0.0.1:{}", server.port));
    let admin = secrecy::SecretString::from(format!("{pw}-admin"));
    let reply = Mariadb
        .secure_ask(&check, std::sync::Arc::new(probe_config), &admin)
        .unwrap()
        .await
        .unwrap();
    let probe = Mariadb.health(&reply);
    assert!(probe.healthy, "{probe:?}");
    assert_eq!(probe.role.as_deref(), Some("primary"));
}

/// A CA that did not sign the server's certificate: names `mariadb.tls.ca` and its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named_with_its_file() {
    let (server, pki, pw) = secure_server("wrong-ca").await;
    let other_dir = pki.ca.parent().unwrap().with_file_name("other");
    let other = Pki::ensure(&other_dir, &["127.0.0.1"]).unwrap();
    export("LB_TEST_MARIADB_SECURE_WRONG_CA", &pw);
    let mut c = settings(&pki, "LB_TEST_MARIADB_SECURE_WRONG_CA");
    c.tls.as_mut().unwrap().ca = Some(other.ca.clone());
    let ca = other.ca.display().to_string();
    let wants = ["unknown authority", "mariadb.tls.ca", &ca];
    refused(server.port, c, &wants, &pw).await;
}

/// A wrong password: names the user and where the password came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let (server, pki, pw) = secure_server("wrong-pw").await;
    let wrong = format!("{pw}-not");
    export("LB_TEST_MARIADB_SECURE_WRONG_PW", &wrong);
    let c = settings(&pki, "LB_TEST_MARIADB_SECURE_WRONG_PW");
    let wants = ["access denied", "`lockbench`", "mariadb.password_env"];
    refused(server.port, c, &wants, &pw).await;
}

/// TLS against a server without TLS (a plain pair's): says it does not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_server_is_named() {
    let dir = test_dir("mariadb", "tls-on-plain");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let server = start(dir, None).await;
    let pw = password("tls-on-plain");
    export("LB_TEST_MARIADB_SECURE_TLS_ON_PLAIN", &pw);
    let c = settings(&pki, "LB_TEST_MARIADB_SECURE_TLS_ON_PLAIN");
    let wants = ["does not speak TLS", "remove `mariadb.tls`"];
    refused(server.port, c, &wants, &pw).await;
}

/// Plaintext against a server that takes only TLS: says to set `mariadb.tls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_only_server_is_named() {
    let (server, pki, pw) = secure_server("plain-on-tls").await;
    export("LB_TEST_MARIADB_SECURE_PLAIN_ON_TLS", &pw);
    let mut c = settings(&pki, "LB_TEST_MARIADB_SECURE_PLAIN_ON_TLS");
    c.tls = None;
    let wants = ["takes only TLS", "set `mariadb.tls`"];
    refused(server.port, c, &wants, &pw).await;
}
