//! The PostgreSQL recipes against a real PostgreSQL that takes only TLS with a client
//! certificate and a SCRAM password, started exactly as the secure managed cluster starts its
//! primary (`lockbench_postgres::server::launch` with a [`Secure`]: `ssl = on`, `hostssl`-only
//! `pg_hba.conf`, the roles of `lockbench_postgres::secure`), and the misconfigurations a
//! user meets first, each failing in under 2 s naming the server, the setting and the fix,
//! never the password.
//!
//! Each test starts a server of its own (`start-postgres.sh`: `initdb`, then `postgres`) on a
//! free loopback port, with certificates from `lockbench-certs` in a directory of its own, and
//! stops it when it ends. The peer the script asks about is a free port nobody listens on, so
//! the server starts as the primary.

use lockbench_certs::Pki;
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{TestDir, assert_clear, export, start_first_member, test_dir};
use lockbench_core::launch::Secure;
use lockbench_core::{
    Backend, ClientId, Connection, Endpoints, KeyId, LockClient, Outcome, System, Tls,
};
use lockbench_postgres::system::Postgres;
use lockbench_postgres::{POSTGRES, PgBackend, PgRecipe, PostgresKnobs};
use std::process::Child;
use std::time::{Duration, Instant};

/// A real PostgreSQL primary, stopped on drop (before its directory goes).
struct Server {
    child: Child,
    port: u16,
    _dir: TestDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGQUIT: immediate shutdown, the backends go with the postmaster.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT);
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test's password for lockbench's user (the administrator's is derived from it).
fn password(test: &str) -> String {
    format!("pw-{test}-{}-Qz4", std::process::id())
}

/// The profile's files in `dir/certs` as the managed cluster names them.
fn secure(dir: &std::path::Path, pw: &str) -> Secure {
    Secure::in_dir(
        &dir.join("certs"),
        "lockbench",
        pw.to_string().into(),
        format!("{pw}-admin").into(),
    )
}

/// Starts pg1 in `dir` (secure when `secure` is given) and waits until it answers.
async fn start(dir: TestDir, secure: Option<&Secure>) -> Server {
    let (child, port) = start_first_member(&Postgres, &dir, secure);
    let log = dir.join("log");
    let server = Server {
        child,
        port,
        _dir: dir,
    };
    // Listening, then past its startup (a connection during recovery is refused).
    let deadline = Instant::now() + Duration::from_secs(30);
    let check = Postgres.health_check(&format!("127.0.0.1:{}", server.port));
    loop {
        // A plain probe is answered by a plain server, refused by pg_hba on a secure one:
        // either way the server runs past its startup.
        if let Ok(reply) = lockbench_cluster::exchange(&check).await {
            let text = String::from_utf8_lossy(&reply);
            if !text.contains("starting up") && !reply.is_empty() {
                break;
            }
        }
        if Instant::now() > deadline {
            panic!("postgres did not start: see {}", log.display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

/// The settings a user writes: TLS with the CA and the client certificate, user `lockbench`,
/// the password in environment variable `var`.
fn settings(pki: &Pki, var: &str) -> Connection {
    let [ca, cert, key] = [&pki.ca, &pki.client_cert, &pki.client_key].map(|p| Some(p.clone()));
    let tls = Some(Tls {
        server_name: None,
        ca,
        cert,
        key,
    });
    let (user, password_env) = (Some("lockbench".into()), Some(var.into()));
    Connection {
        tls,
        user,
        password_env,
        ..Connection::default()
    }
}

fn endpoints(port: u16, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set(POSTGRES, vec![format!("127.0.0.1:{port}")]);
    e.set_connection(POSTGRES, connection);
    e
}

/// A secure server of test `test`: its directory's certificates and the password.
async fn secure_server(test: &str) -> (Server, Pki, String) {
    let dir = test_dir("postgres", test);
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password(test);
    let profile = secure(&dir, &pw);
    let server = start(dir, Some(&profile)).await;
    (server, pki, pw)
}

/// `pg-advisory` at `port` with `connection` fails to connect, clearly (`wants`), in time, naming
/// the server and never `secret`.
async fn refused(port: u16, connection: Connection, wants: &[&str], secret: &str) {
    let e = endpoints(port, connection);
    let b = PgBackend::new(PgRecipe::Advisory, &e, &PostgresKnobs::default(), 1).unwrap();
    let (err, took) = first_error(&b).await;
    assert_clear(&err, took, &format!("127.0.0.1:{port}"), wants, secret);
}

/// Connects one client; the error and how long it took.
async fn first_error(b: &PgBackend) -> (String, Duration) {
    let t0 = Instant::now();
    let err = match b.connect(ClientId(0)).await {
        Err(e) => e.to_string(),
        Ok(c) => {
            c.close().await;
            panic!("the misconfigured client connected")
        }
    };
    (err, t0.elapsed())
}

/// `pg-advisory` over mutual TLS with a SCRAM password as `lockbench`: the contract, the
/// counters (`pg_stat_statements`, read as that user) count the client's statements, the user
/// has no privilege beyond its own schema, and the cluster's own probe (TLS after
/// `SSLRequest`, SCRAM as the administrator) reads the server as the primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_locks_over_mutual_tls_with_a_scram_password() {
    let (server, pki, pw) = secure_server("advisory").await;
    export("LB_TEST_PG_SECURE_ADVISORY", &pw);
    let e = endpoints(server.port, settings(&pki, "LB_TEST_PG_SECURE_ADVISORY"));
    let knobs = PostgresKnobs {
        namespace: 4242,
        ..PostgresKnobs::default()
    };
    let b = PgBackend::new(PgRecipe::Advisory, &e, &knobs, 1).unwrap();
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 3, 5).await;

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

    // Least privilege: nothing in `public`, no superuser's views.
    let config = format!(
        "host=127.0.0.1 port={} user=lockbench dbname=lockbench sslmode=require",
        server.port
    );
    let mut config: tokio_postgres::Config = config.parse().unwrap();
    config.password(pw.as_str());
    let tls = lockbench_core::crypto::client_config(
        "postgres",
        settings(&pki, "x").tls.as_ref().unwrap(),
    )
    .unwrap();
    let (client, conn) = config
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let denied = client
        .batch_execute("CREATE TABLE public.lockbench_denied (x int)")
        .await
        .unwrap_err();
    assert_eq!(denied.code().map(|c| c.code()), Some("42501"), "{denied}");
    let super_ = client.query_one("SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication FROM pg_roles WHERE rolname = current_user", &[]).await.unwrap();
    assert!(
        !super_.get::<_, bool>(0),
        "lockbench has a role attribute it does not need"
    );

    // The cluster's probe of a secure server.
    let profile_tls = Tls {
        ca: Some(pki.ca.clone()),
        cert: Some(pki.server_cert.clone()),
        key: Some(pki.server_key.clone()),
        server_name: None,
    };
    let probe_config = lockbench_core::crypto::client_config("secure", &profile_tls).unwrap();
    let check = Postgres.health_check(&format!("127.0.0.1:{}", server.port));
    let admin = secrecy::SecretString::from(format!("{pw}-admin"));
    let reply = Postgres
        .secure_ask(&check, std::sync::Arc::new(probe_config), &admin)
        .unwrap()
        .await
        .unwrap();
    let probe = Postgres.health(&reply);
    assert!(probe.healthy, "{probe:?}");
    assert_eq!(probe.role.as_deref(), Some("primary"));
}

/// A CA that did not sign the server's certificate: names `postgres.tls.ca` and its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named_with_its_file() {
    let (server, pki, pw) = secure_server("wrong-ca").await;
    let other_dir = pki.ca.parent().unwrap().with_file_name("other");
    let other = Pki::ensure(&other_dir, &["127.0.0.1"]).unwrap();
    export("LB_TEST_PG_SECURE_WRONG_CA", &pw);
    let mut c = settings(&pki, "LB_TEST_PG_SECURE_WRONG_CA");
    c.tls.as_mut().unwrap().ca = Some(other.ca.clone());
    let ca = other.ca.display().to_string();
    let wants = ["unknown authority", "postgres.tls.ca", &ca];
    refused(server.port, c, &wants, &pw).await;
}

/// A wrong password: names the user and where the password came from (never the password,
/// the wrong one nor the right one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let (server, pki, pw) = secure_server("wrong-pw").await;
    let wrong = format!("{pw}-not");
    export("LB_TEST_PG_SECURE_WRONG_PW", &wrong);
    let c = settings(&pki, "LB_TEST_PG_SECURE_WRONG_PW");
    let wants = [
        "password authentication failed",
        "`lockbench`",
        "postgres.password_env",
    ];
    // `wrong` contains `pw`: checking it checks both.
    refused(server.port, c, &wants, &pw).await;
}

/// TLS against a server without TLS (a plain pair's): says it does not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_server_is_named() {
    let dir = test_dir("postgres", "tls-on-plain");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let server = start(dir, None).await;
    let pw = password("tls-on-plain");
    export("LB_TEST_PG_SECURE_TLS_ON_PLAIN", &pw);
    let c = settings(&pki, "LB_TEST_PG_SECURE_TLS_ON_PLAIN");
    let wants = ["does not speak TLS", "remove `postgres.tls`"];
    refused(server.port, c, &wants, &pw).await;
}

/// Plaintext against a server that takes only TLS: says to set `postgres.tls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_only_server_is_named() {
    let (server, pki, pw) = secure_server("plain-on-tls").await;
    export("LB_TEST_PG_SECURE_PLAIN_ON_TLS", &pw);
    let mut c = settings(&pki, "LB_TEST_PG_SECURE_PLAIN_ON_TLS");
    c.tls = None;
    let wants = ["takes only TLS", "set `postgres.tls`"];
    refused(server.port, c, &wants, &pw).await;
}
