//! The etcd recipes against a real etcd that takes only mutual TLS and has authentication on, with
//! lockbench's user given exactly the role `lockbench_etcd::secure::set_up` creates, and the
//! misconfigurations a user meets first, each failing in under 2 s naming the member, the setting
//! and the fix.
//!
//! Each test starts a member of its own (the `etcd` binary the managed cluster runs) on free
//! loopback ports: client URLs `https://` (`--client-cert-auth`, `--trusted-ca-file`) and, for
//! the wrong-port cases, `http://`; certificates from `lockbench-certs` in a directory of its
//! own. It is stopped when the test ends.

use lockbench_certs::{ClientCert, Pki};
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{TestDir, assert_clear, export, free_port, test_dir};
use lockbench_core::{
    Backend, BackendKind, ClientId, Connection, Endpoints, KeyId, LockClient, Outcome, Tls,
};
use lockbench_etcd::secure::{Users, set_up};
use lockbench_etcd::{ETCD_LEASE, ETCD_LOCKAPI, EtcdBackend, EtcdKnobs};
use secrecy::SecretString;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const PREFIX: &str = "/lockbench";

/// A real etcd member, stopped on drop.
struct Member {
    child: Child,
    /// Its TLS client port.
    tls: u16,
    /// Its plaintext client port.
    plain: u16,
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a one-member cluster in `dir` with `pki`'s server certificate, asking clients for a
/// certificate of `pki`'s CA, and waits until it has a leader.
fn start(dir: &Path, pki: &Pki) -> Member {
    let (tls, plain, peer) = (free_port(), free_port(), free_port());
    let clients = format!("https://127.0.0.1:{tls},http://127.0.0.1:{plain}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let log = std::fs::File::create(dir.join("etcd.log")).unwrap();
    let child = Command::new("etcd")
        .args(["--name", "s1", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--listen-client-urls", &clients])
        .args(["--advertise-client-urls", &clients])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("s1={peer_url}")])
        .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
        .arg("--cert-file")
        .arg(&pki.server_cert)
        .arg("--key-file")
        .arg(&pki.server_key)
        .arg("--trusted-ca-file")
        .arg(&pki.ca)
        .arg("--client-cert-auth")
        .args(["--logger", "zap", "--log-outputs", "stderr"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("etcd is installed (scripts/install-deps)");
    let member = Member { child, tls, plain };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let healthy = std::net::TcpStream::connect(("127.0.0.1", plain))
            .ok()
            .and_then(|mut s| {
                use std::io::{Read, Write};
                s.write_all(b"GET /health HTTP/1.0\r\n\r\n").ok()?;
                let mut answer = String::new();
                s.read_to_string(&mut answer).ok()?;
                Some(answer.contains("\"health\":\"true\""))
            })
            .unwrap_or(false);
        if healthy {
            return member;
        }
        assert!(
            Instant::now() < deadline,
            "etcd did not become healthy: see {}",
            dir.join("etcd.log").display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The password of the `lockbench` user (a fresh one per test).
fn password(test: &str) -> String {
    format!("pw-{test}-{}-Xq7", std::process::id())
}

/// Turns authentication on with user `lockbench` (`password`) and the least-privilege role on
/// [`PREFIX`], through the member's TLS port with the client certificate.
async fn secure(member: &Member, pki: &Pki, password: &str) {
    let root = SecretString::from(format!("{password}-root"));
    let pw = SecretString::from(password.to_string());
    let users = Users {
        root_password: &root,
        user: "lockbench",
        password: &pw,
        prefix: PREFIX,
    };
    set_up(&[url(member.tls)], Some(&tls(pki)), &users)
        .await
        .unwrap();
}

fn url(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn tls(pki: &Pki) -> Tls {
    Tls {
        ca: Some(pki.ca.clone()),
        cert: Some(pki.client_cert.clone()),
        key: Some(pki.client_key.clone()),
        server_name: None,
    }
}

/// A member of test `test` with authentication on ([`secure`]), with `pki` (or a new set),
/// and the settings a user writes for it, the password exported in a variable of the test's
/// own.
struct Secured {
    member: Member,
    password: String,
    settings: Connection,
    /// Last: removed after the member has stopped.
    dir: TestDir,
}

async fn secured(test: &str, pki: Option<Pki>) -> Secured {
    let dir = test_dir("etcd", test);
    let pki = pki.unwrap_or_else(|| Pki::ensure(&dir.join("certs"), &["127.0.0.1"]).unwrap());
    let member = start(&dir, &pki);
    let password = password(test);
    secure(&member, &pki, &password).await;
    let var = format!(
        "LB_TEST_ETCD_SECURE_{}",
        test.to_uppercase().replace('-', "_")
    );
    export(&var, &password);
    let settings = settings(&pki, &var);
    Secured {
        member,
        password,
        settings,
        dir,
    }
}

/// The settings a user writes for this member: mutual TLS, user `lockbench`, the password in
/// environment variable `var`.
fn settings(pki: &Pki, var: &str) -> Connection {
    Connection {
        tls: Some(tls(pki)),
        user: Some("lockbench".into()),
        password_env: Some(var.into()),
        ..Connection::default()
    }
}

fn endpoints(port: u16, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set("etcd", vec![format!("http://127.0.0.1:{port}")]);
    e.set_connection("etcd", connection);
    e
}

fn backend(kind: BackendKind, e: &Endpoints, test: &str) -> EtcdBackend {
    let knobs = EtcdKnobs {
        lease_ttl: Duration::from_secs(5),
        prefix: format!("{PREFIX}/{test}"),
    };
    EtcdBackend::new(kind, e, &knobs, 4, 1).unwrap()
}

/// etcd-lease and etcd-lockapi over mutual TLS as `lockbench` with only its role: the pre-run
/// check passes, the conformance contract holds, `/metrics` (over HTTPS with the client
/// certificate) counts what the clients sent, and the observer names the holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_over_mutual_tls_as_the_least_privileged_user() {
    let s = secured("recipes", None).await;
    let pw = s.password.clone();
    let e = endpoints(s.member.tls, s.settings.clone());
    for kind in [ETCD_LEASE, ETCD_LOCKAPI] {
        let b = backend(kind, &e, "recipes");
        b.check_servers().await.unwrap();
        conformance::acquire_release_and_tokens_grow(&b).await;
        conformance::mutual_exclusion(&b, 3, 5).await;
        let before = b.server_counters().await.unwrap();
        let mut c = b.connect(ClientId(0)).await.unwrap();
        for round in 0..5 {
            let Outcome::Ok(g) = c.acquire(KeyId(round % 2)).await else {
                panic!("{kind}: acquire over TLS")
            };
            assert!(c.release(g).await.is_ok(), "{kind}: release");
        }
        let sent = c.requests_sent().unwrap();
        c.close().await;
        let after = b.server_counters().await.unwrap();
        let counted = after.requests - before.requests;
        // The lease revoke of close() is the one request the client does not count.
        assert!(
            counted >= sent && counted <= sent + 1,
            "{kind}: the members counted {counted}, the client sent {sent}: {}",
            after.source
        );
        assert!(
            !format!("{b:?}").contains(&pw),
            "the backend's Debug shows the password"
        );
    }

    let b = backend(ETCD_LEASE, &e, "observed");
    conformance::observer_names_the_holder(&b).await;
}

/// `set_up` run again on a member whose authentication it already turned on (a second `up
/// --secure` on the same data) succeeds, twice, and leaves lockbench's user working: it logs
/// in as `root` and keeps `root`'s password (changing it would revoke the set-up's own token:
/// "invalid auth token" at `user grant-role`, before this was fixed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_up_runs_again_on_a_member_with_authentication_on() {
    let s = secured("again", None).await;
    let pki = Pki::in_dir(&s.dir.join("certs"));
    for _ in 0..2 {
        secure(&s.member, &pki, &s.password).await;
    }
    let b = backend(
        ETCD_LEASE,
        &endpoints(s.member.tls, s.settings.clone()),
        "again",
    );
    b.check_servers().await.unwrap();
    let mut c = b.connect(ClientId(0)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(0)).await else {
        panic!("acquire as lockbench after the set-up ran again")
    };
    assert!(c.release(g).await.is_ok());
    c.close().await;
}

/// The pre-run check, then a connect, as a run does; the first error and how long it took.
async fn first_error(b: &EtcdBackend) -> (String, Duration) {
    let t0 = Instant::now();
    let err = match b.check_servers().await {
        Err(e) => e.to_string(),
        Ok(()) => match b.connect(ClientId(0)).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("the misconfigured client connected"),
        },
    };
    (err, t0.elapsed())
}

/// One case: a member with auth on, the settings changed by `change`, the endpoint on
/// `plain_port` or the TLS port; the error must name the member and say `wants`.
async fn case(
    test: &str,
    plain_port: bool,
    change: impl FnOnce(&mut Connection, &Path),
    wants: &[&str],
) {
    let s = secured(test, None).await;
    let mut connection = s.settings.clone();
    change(&mut connection, &s.dir);
    let port = if plain_port {
        s.member.plain
    } else {
        s.member.tls
    };
    let b = backend(ETCD_LEASE, &endpoints(port, connection), test);
    let (err, took) = first_error(&b).await;
    assert_clear(&err, took, &format!("127.0.0.1:{port}"), wants, &s.password);
}

/// A CA that did not sign the member's certificate: names `etcd.tls.ca` and its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named_with_its_file() {
    let other = test_dir("etcd", "wrong-ca-other");
    let other = Pki::ensure(&other, &["127.0.0.1"]).unwrap();
    let ca = other.ca.display().to_string();
    let change = |c: &mut Connection, _: &Path| c.tls.as_mut().unwrap().ca = Some(other.ca.clone());
    case(
        "wrong-ca",
        false,
        change,
        &["unknown authority", "etcd.tls.ca", &ca],
    )
    .await;
}

/// A wrong password: names the user and where the password came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let change = |c: &mut Connection, dir: &Path| {
        std::fs::write(dir.join("wrong-pw"), "not-the-password\n").unwrap();
        c.password_env = None;
        c.password_file = Some(dir.join("wrong-pw"));
    };
    let wants = ["authentication failed", "`lockbench`", "etcd.password_file"];
    case("wrong-pw", false, change, &wants).await;
}

/// TLS against the member's plaintext client URL: says the port does not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_port_is_named() {
    let wants = ["does not speak TLS", "etcd.tls"];
    case("tls-on-plain", true, |_, _| {}, &wants).await;
}

/// Plaintext against the member's TLS client URL: says to set `etcd.tls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_port_is_named() {
    let wants = ["serves TLS", "set `etcd.tls`"];
    case("plain-on-tls", false, |c, _| c.tls = None, &wants).await;
}

/// One client-certificate case: a member with auth on and `pki` (or a new set), the client
/// presenting `cert`; the error must name the member, `etcd.tls.cert` and the certificate's
/// file.
async fn client_certificate_case(test: &str, pki: Option<Pki>, cert: &ClientCert, wants: &str) {
    let s = secured(test, pki).await;
    let mut connection = s.settings.clone();
    let tls = connection.tls.as_mut().unwrap();
    tls.cert = Some(cert.cert.clone());
    tls.key = Some(cert.key.clone());
    let b = backend(ETCD_LEASE, &endpoints(s.member.tls, connection), test);
    let (err, took) = first_error(&b).await;
    let file = cert.cert.display().to_string();
    let wants = [
        "refused the client certificate",
        "etcd.tls.cert",
        wants,
        &file,
    ];
    let member = format!("127.0.0.1:{}", s.member.tls);
    assert_clear(&err, took, &member, &wants, &s.password);
}

/// A client certificate of another CA: the member refuses it; names `etcd.tls.cert`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_of_another_ca_is_named() {
    let other = test_dir("etcd", "foreign-cert-other");
    let other = Pki::ensure(&other, &["127.0.0.1"]).unwrap();
    let foreign = ClientCert {
        cert: other.client_cert.clone(),
        key: other.client_key.clone(),
    };
    client_certificate_case("foreign-cert", None, &foreign, "signed by the CA").await;
}

/// An expired client certificate of the right CA: the member refuses it; names
/// `etcd.tls.cert`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_client_certificate_is_named() {
    let dir = test_dir("etcd", "expired-cert-files");
    let (pki, expired) = Pki::ensure_with_expired_client(&dir, &["127.0.0.1"]).unwrap();
    client_certificate_case("expired-cert", Some(pki), &expired, "expired").await;
}

/// A user whose role lacks the recipes' key range: the pre-run check names the permission and
/// the range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_permission_is_named() {
    // The role covers `/lockbench/`; these recipes run under `/elsewhere`.
    let s = secured("no-perm", None).await;
    let e = endpoints(s.member.tls, s.settings.clone());
    let knobs = EtcdKnobs {
        lease_ttl: Duration::from_secs(5),
        prefix: "/elsewhere".into(),
    };
    let b = EtcdBackend::new(ETCD_LEASE, &e, &knobs, 4, 1).unwrap();
    let (err, took) = first_error(&b).await;
    let wants = [
        "permission denied",
        "`lockbench`",
        "READ",
        "/elsewhere/",
        "grant-permission",
    ];
    assert_clear(
        &err,
        took,
        &format!("127.0.0.1:{}", s.member.tls),
        &wants,
        &s.password,
    );
}

/// `tls.server_name`: the name the member's certificate is verified against instead of the
/// address's host. `localhost` (which the certificate names) connects; a name it lacks fails
/// naming the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_name_is_what_the_certificate_is_checked_against() {
    let s = secured("server-name", None).await;
    let named = |name: &str| {
        let mut c = s.settings.clone();
        c.tls.as_mut().unwrap().server_name = Some(name.into());
        backend(ETCD_LEASE, &endpoints(s.member.tls, c), "server-name")
    };
    let good = named("localhost");
    good.check_servers().await.unwrap();
    conformance::acquire_release_and_tokens_grow(&good).await;
    let (err, took) = first_error(&named("etcd.elsewhere.example")).await;
    let wants = [
        "does not name `etcd.elsewhere.example`",
        "etcd.tls.server_name",
    ];
    let member = format!("127.0.0.1:{}", s.member.tls);
    assert_clear(&err, took, &member, &wants, &s.password);
}
