//! The Redis recipes against real Redis servers that take only TLS (mutual: the client presents
//! a certificate) and only an ACL user with the least privilege lockbench needs, and
//! the four misconfigurations a user meets first, each failing in under 2 s naming the server,
//! the setting and the fix.
//!
//! Each test starts servers of its own (`redis-server` from the OS package, as the managed
//! cluster does) on free loopback ports, with certificates from `lockbench-certs` in a
//! directory of its own, and stops them when it ends. Each server serves TLS on `tls-port` and,
//! for the wrong-port cases only, plaintext on `port`; its only usable user is `lockbench` (the
//! `default` user is off), with the rules of `lockbench_redis::secure::ACL_RULES`.

use lockbench_certs::{ClientCert, Pki};
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{assert_clear, export, free_port, test_dir};
use lockbench_core::{Backend, ClientId, Connection, Endpoints, KeyId, LockClient, Outcome, Tls};
use lockbench_redis::secure::{ACL_RULES, OBSERVER_ACL_RULES, ServerTls};
use lockbench_redis::{RedisKnobs, RedlockBackend, RedlockKnobs, SetMode, SetNxBackend};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(10);

/// A real `redis-server` with TLS and ACL users, stopped on drop.
struct SecureServer {
    child: Child,
    /// Its TLS port.
    tls: u16,
    /// Its plaintext port.
    plain: u16,
}

impl Drop for SecureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The password of the `lockbench` user in `dir` (a fresh one per test).
fn password(test: &str) -> String {
    format!("pw-{test}-{}-Xq7", std::process::id())
}

/// Starts a server in `dir/name` trusting `pki`'s CA, with user `lockbench` and `password`
/// and the ACL rules [`ACL_RULES`].
fn start(dir: &Path, name: &str, pki: &Pki, password: &str) -> SecureServer {
    start_with(dir, name, pki, password, ACL_RULES)
}

/// [`start`] with these ACL rules.
fn start_with(dir: &Path, name: &str, pki: &Pki, password: &str, rules: &str) -> SecureServer {
    let (tls, plain) = (free_port(), free_port());
    let home = dir.join(name);
    std::fs::create_dir_all(&home).unwrap();
    let tls_files = ServerTls {
        ca: &pki.ca,
        cert: &pki.server_cert,
        key: &pki.server_key,
    };
    let password = secrecy::SecretString::from(password.to_string());
    let mut text = lockbench_redis::secure::config(
        "127.0.0.1",
        tls,
        plain,
        tls_files,
        "lockbench",
        &password,
        rules,
    );
    text.push_str(&format!(
        "save \"\"\nappendonly no\ndir {}\n",
        home.display()
    ));
    let child = spawn("redis-server", &home, "redis.conf", &text, &[tls, plain]);
    SecureServer { child, tls, plain }
}

/// Writes `text` to `home/conf` (only its owner reads it: it holds the password), starts
/// `program` with it (its output in `home/log`) and waits until it listens on `ports`.
fn spawn(program: &str, home: &Path, conf: &str, text: &str, ports: &[u16]) -> Child {
    let conf = home.join(conf);
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&conf)
        .unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    let log = std::fs::File::create(home.join("log")).unwrap();
    let mut child = Command::new(program)
        .arg(&conf)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{program} is installed (scripts/install-test-deps): {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while ports
        .iter()
        .any(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_err())
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "{program} did not listen on {ports:?}: see {}",
                home.join("log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The settings a user writes for these servers: TLS with the CA and the client certificate,
/// user `lockbench`, the password in environment variable `var`.
fn settings(pki: &Pki, var: &str) -> Connection {
    Connection {
        tls: Some(Tls {
            ca: Some(pki.ca.clone()),
            cert: Some(pki.client_cert.clone()),
            key: Some(pki.client_key.clone()),
            server_name: None,
        }),
        user: Some("lockbench".into()),
        password_env: Some(var.into()),
        ..Connection::default()
    }
}

/// `group` at `ports` on loopback, with `connection`.
fn endpoints(group: &str, ports: &[u16], connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set(
        group,
        ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
    );
    e.set_connection(group, connection);
    e
}

fn knobs(test: &str) -> RedisKnobs {
    RedisKnobs {
        ttl: TTL,
        prefix: format!("lockbench:{test}:"),
        ..RedisKnobs::default()
    }
}

/// `redis-setnx` over TLS with the ACL user: the conformance contract, and the server's
/// `INFO commandstats` (read over TLS as that user) counts exactly the requests the client
/// sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_over_mutual_tls_with_an_acl_user() {
    let dir = test_dir("redis", "setnx");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("setnx");
    let server = start(&dir, "r1", &pki, &pw);
    export("LB_TEST_SECURE_SETNX", &pw);
    let e = endpoints(
        "redis",
        &[server.tls],
        settings(&pki, "LB_TEST_SECURE_SETNX"),
    );
    let b = SetNxBackend::new(&e, &knobs("setnx"), 8, 1, SetMode::Nx).unwrap();
    b.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 4, 10).await;

    server_counts_what_a_client_sent(&b, &pw).await;
}

/// Ten rounds of acquire, renew and release on one client of `b`: the server's `INFO
/// commandstats` counts exactly the requests the client sent, and `b`'s `Debug` does not show
/// `password`.
async fn server_counts_what_a_client_sent(b: &SetNxBackend, password: &str) {
    let before = b.server_counters().await.unwrap();
    let mut c = b.connect(ClientId(0)).await.unwrap();
    for round in 0..10 {
        let Outcome::Ok(g) = c.acquire(KeyId(round % 3)).await else {
            panic!("acquire as the ACL user")
        };
        assert!(c.renew(&g).await.is_ok());
        assert!(c.release(g).await.is_ok());
    }
    let sent = c.requests_sent().unwrap();
    c.close().await;
    let after = b.server_counters().await.unwrap();
    assert_eq!(after.requests - before.requests, sent, "{}", after.source);
    assert!(sent >= 30, "{sent} requests for 10 rounds");
    assert!(
        !format!("{b:?}").contains(password),
        "the backend's Debug shows the password"
    );
}

/// `redis-setnx` over plaintext with the ACL user (its clients' own connections log in with
/// `AUTH` themselves): the conformance contract, the server's count of the requests the client
/// sent, and a wrong password named with its user and source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setnx_over_plaintext_with_an_acl_user_logs_in_and_names_a_wrong_password() {
    let dir = test_dir("redis", "setnx-plain");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("setnx-plain");
    let server = start(&dir, "r1", &pki, &pw);
    export("LB_TEST_PLAIN_SETNX", &pw);
    let mut c = settings(&pki, "LB_TEST_PLAIN_SETNX");
    c.tls = None;
    let e = endpoints("redis", &[server.plain], c.clone());
    let b = SetNxBackend::new(&e, &knobs("setnx-plain"), 8, 1, SetMode::Nx).unwrap();
    b.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 4, 10).await;
    server_counts_what_a_client_sent(&b, &pw).await;

    let wrong = format!("{pw}-not");
    export("LB_TEST_PLAIN_SETNX_WRONG", &wrong);
    c.password_env = Some("LB_TEST_PLAIN_SETNX_WRONG".into());
    let e = endpoints("redis", &[server.plain], c);
    let b = SetNxBackend::new(&e, &knobs("setnx-plain"), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", server.plain);
    let wants = ["authentication failed", "`lockbench`", "redis.password_env"];
    assert_clear(&err, took, &server, &wants, &wrong);
}

/// Redlock over three TLS servers with the ACL user, and the server-side observer (keyspace
/// notifications, `GET`, `PTTL`, over TLS; the user has `OBSERVER_ACL_RULES` too) names the
/// holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_and_its_observer_over_mutual_tls_with_an_acl_user() {
    let dir = test_dir("redis", "redlock");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("redlock");
    let servers: Vec<SecureServer> = ["a", "b", "c"]
        .into_iter()
        .map(|n| {
            start_with(
                &dir,
                n,
                &pki,
                &pw,
                &format!("{ACL_RULES} {OBSERVER_ACL_RULES}"),
            )
        })
        .collect();
    export("LB_TEST_SECURE_REDLOCK", &pw);
    let ports: Vec<u16> = servers.iter().map(|s| s.tls).collect();
    let e = endpoints("redlock", &ports, settings(&pki, "LB_TEST_SECURE_REDLOCK"));
    let knobs = RedlockKnobs {
        ttl: TTL,
        prefix: "lockbench:redlock:".into(),
        ..RedlockKnobs::default()
    };
    let b = RedlockBackend::new(&e, &knobs, 8, 1).unwrap();
    b.check_servers().await.unwrap();
    conformance::mutual_exclusion(&b, 4, 10).await;

    conformance::observer_names_the_holder(&b).await;
}

/// Connects one client and, if that worked, asks the servers to answer (the pre-run check);
/// the first error, and how long it took.
async fn first_error<B: Backend>(b: &B) -> (String, Duration) {
    let t0 = Instant::now();
    let err = match b.connect(ClientId(0)).await {
        Err(e) => e.to_string(),
        Ok(c) => {
            c.close().await;
            match b.check_servers().await {
                Err(e) => e.to_string(),
                Ok(()) => panic!("the misconfigured client connected and was answered"),
            }
        }
    };
    (err, t0.elapsed())
}

/// A CA that did not sign the server's certificate: fails naming `redis.tls.ca` and its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named_with_its_file() {
    let dir = test_dir("redis", "wrong-ca");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let other = Pki::ensure(&dir.join("other"), &["127.0.0.1"]).unwrap();
    let pw = password("wrong-ca");
    let server = start(&dir, "r", &pki, &pw);
    export("LB_TEST_SECURE_WRONG_CA", &pw);
    let mut c = settings(&pki, "LB_TEST_SECURE_WRONG_CA");
    c.tls.as_mut().unwrap().ca = Some(other.ca.clone());
    let e = endpoints("redis", &[server.tls], c);
    let b = SetNxBackend::new(&e, &knobs("wrong-ca"), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let ca = other.ca.display().to_string();
    let server = format!("127.0.0.1:{}", server.tls);
    let wants = ["unknown authority", "redis.tls.ca", &ca];
    assert_clear(&err, took, &server, &wants, &pw);
}

/// A wrong password: fails naming the user and where the password came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let dir = test_dir("redis", "wrong-pw");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("wrong-pw");
    let server = start(&dir, "r", &pki, &pw);
    let wrong = format!("{pw}-not");
    export("LB_TEST_SECURE_WRONG_PW", &wrong);
    let e = endpoints(
        "redis",
        &[server.tls],
        settings(&pki, "LB_TEST_SECURE_WRONG_PW"),
    );
    let b = SetNxBackend::new(&e, &knobs("wrong-pw"), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", server.tls);
    let wants = ["authentication failed", "`lockbench`", "redis.password_env"];
    assert_clear(&err, took, &server, &wants, &wrong);
}

/// TLS against the server's plaintext port: fails saying the port does not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_port_is_named() {
    let dir = test_dir("redis", "tls-on-plain");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("tls-on-plain");
    let server = start(&dir, "r", &pki, &pw);
    export("LB_TEST_SECURE_TLS_ON_PLAIN", &pw);
    let e = endpoints(
        "redis",
        &[server.plain],
        settings(&pki, "LB_TEST_SECURE_TLS_ON_PLAIN"),
    );
    let b = SetNxBackend::new(&e, &knobs("tls-on-plain"), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", server.plain);
    let wants = ["not speak TLS", "redis.tls"];
    assert_clear(&err, took, &server, &wants, &pw);
}

/// Plaintext against the server's TLS port: fails saying to set `redis.tls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_port_is_named() {
    let dir = test_dir("redis", "plain-on-tls");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("plain-on-tls");
    let server = start(&dir, "r", &pki, &pw);
    export("LB_TEST_SECURE_PLAIN_ON_TLS", &pw);
    let mut c = settings(&pki, "LB_TEST_SECURE_PLAIN_ON_TLS");
    c.tls = None;
    let e = endpoints("redis", &[server.tls], c);
    let b = SetNxBackend::new(&e, &knobs("plain-on-tls"), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", server.tls);
    let wants = ["closed the connection", "set `redis.tls`"];
    assert_clear(&err, took, &server, &wants, &pw);
}

/// A real `redis-sentinel` that takes only TLS (client certificates of `pki`'s CA) and only
/// user `lockbench` with `password`, monitoring the primary at 127.0.0.1:`primary` (lockbench's
/// managed secure Sentinel config, `lockbench_redis::secure::sentinel_config`); stopped on drop.
fn start_sentinel(dir: &Path, pki: &Pki, password: &str, primary: u16) -> SecureServer {
    let port = free_port();
    let home = dir.join("sentinel");
    std::fs::create_dir_all(&home).unwrap();
    let secure = lockbench_core::launch::Secure::in_dir(
        pki.ca.parent().unwrap(),
        "lockbench",
        password.to_string().into(),
        format!("{password}-admin").into(),
    );
    let master = lockbench_core::SENTINEL_MASTER_NAME;
    let mut text = format!(
        "port 0\nbind 127.0.0.1\ndir {}\nsentinel monitor {master} 127.0.0.1 {primary} 1\n",
        home.display()
    );
    text.push_str(&lockbench_redis::secure::sentinel_config(
        &secure, master, port,
    ));
    let child = spawn("redis-sentinel", &home, "sentinel.conf", &text, &[port]);
    SecureServer {
        child,
        tls: port,
        plain: 0,
    }
}

/// `redis-sentinel` with the `[sentinel]` settings: it asks a TLS-only Sentinel as the ACL
/// user which server is the primary, and reaches that TLS-only primary with the same settings
/// (the conformance contract holds there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_asks_a_tls_sentinel_and_reaches_the_primary_with_the_same_settings() {
    let dir = test_dir("redis", "sentinel");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("sentinel");
    let primary = start(&dir, "primary", &pki, &pw);
    let sentinel = start_sentinel(&dir, &pki, &pw, primary.tls);
    export("LB_TEST_SECURE_SENTINEL", &pw);
    let e = endpoints(
        "sentinel",
        &[sentinel.tls],
        settings(&pki, "LB_TEST_SECURE_SENTINEL"),
    );
    let b = SetNxBackend::via_sentinel(&e, &knobs("sentinel"), 4, 1).unwrap();
    b.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 3, 5).await;
}

/// A wrong password to the Sentinels: fails fast naming the Sentinel, the user and where the
/// password came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_to_a_sentinel_is_named() {
    let dir = test_dir("redis", "sentinel-wrong-pw");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let pw = password("sentinel-wrong-pw");
    let primary = start(&dir, "primary", &pki, &pw);
    let sentinel = start_sentinel(&dir, &pki, &pw, primary.tls);
    let wrong = format!("{pw}-not");
    export("LB_TEST_SECURE_SENTINEL_WRONG_PW", &wrong);
    let e = endpoints(
        "sentinel",
        &[sentinel.tls],
        settings(&pki, "LB_TEST_SECURE_SENTINEL_WRONG_PW"),
    );
    let b = SetNxBackend::via_sentinel(&e, &knobs("sentinel-wrong-pw"), 1, 1).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", sentinel.tls);
    let wants = [
        "no Sentinel named the primary",
        "authentication failed",
        "`lockbench`",
        "sentinel.password_env",
    ];
    assert_clear(&err, took, &server, &wants, &wrong);
}

/// One client-certificate case: a server trusting `pki`'s CA, the client presenting `cert`;
/// the error must name the server, `redis.tls.cert`, the certificate's file and say `wants`.
async fn client_certificate_case(
    test: &str,
    dir: &Path,
    pki: &Pki,
    cert: &ClientCert,
    wants: &str,
) {
    let pw = password(test);
    let server = start(dir, "r", pki, &pw);
    let var = format!("LB_TEST_SECURE_{}", test.to_uppercase().replace('-', "_"));
    export(&var, &pw);
    let mut c = settings(pki, &var);
    let tls = c.tls.as_mut().unwrap();
    tls.cert = Some(cert.cert.clone());
    tls.key = Some(cert.key.clone());
    let e = endpoints("redis", &[server.tls], c);
    let b = SetNxBackend::new(&e, &knobs(test), 1, 1, SetMode::Nx).unwrap();
    let (err, took) = first_error(&b).await;
    let server = format!("127.0.0.1:{}", server.tls);
    let file = cert.cert.display().to_string();
    let wants = [
        "refused the client certificate",
        wants,
        "redis.tls.cert",
        &file,
    ];
    assert_clear(&err, took, &server, &wants, &pw);
}

/// A client certificate of another CA: the server refuses it; names `redis.tls.cert`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_of_another_ca_is_named() {
    let dir = test_dir("redis", "foreign-cert");
    let pki = Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    let other = Pki::ensure(&dir.join("other"), &["127.0.0.1"]).unwrap();
    let foreign = ClientCert {
        cert: other.client_cert.clone(),
        key: other.client_key.clone(),
    };
    client_certificate_case("foreign-cert", &dir, &pki, &foreign, "not signed by").await;
}

/// An expired client certificate of the right CA: the server refuses it; names
/// `redis.tls.cert` and says it has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_client_certificate_is_named() {
    let dir = test_dir("redis", "expired-cert");
    let (pki, expired) =
        Pki::ensure_with_expired_client(&dir.join("certs"), &["127.0.0.1"]).unwrap();
    client_certificate_case("expired-cert", &dir, &pki, &expired, "expired").await;
}
