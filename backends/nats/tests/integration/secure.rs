//! The `nats-kv` recipe against real nats-servers that take only TLS with a client certificate
//! and a password, started exactly as the secure managed cluster starts them
//! (`lockbench_nats::system::Nats`'s launch with the profile of `lockbench_cluster::secure`:
//! TLS on the client port and the routes, HTTPS monitoring, the users of
//! `lockbench_nats::secure`), and the misconfigurations a user meets first, each failing in
//! under 2 s naming the server, the setting and the fix, never the password.
//!
//! Each test lays out a secure profile in a directory of its own (certificates from
//! `lockbench-certs`, the passwords), starts its servers on free loopback ports (all three for
//! the locks, JetStream needing its quorum; the first alone for a refused connection, which
//! needs no JetStream), and stops them when it ends.

use lockbench_certs::Pki;
use lockbench_conformance as conformance;
use lockbench_conformance::secure::{
    TestDir, assert_clear, export, first_connect_error, free_port, spawn, test_dir,
};
use lockbench_core::launch::{Layout, Site};
use lockbench_core::{Backend, ClientId, Connection, Endpoints, KeyId, LockClient, Outcome};
use lockbench_core::{ServerSpec, System, Tls};
use lockbench_nats::NATS;
use lockbench_nats::system::Nats;
use lockbench_nats::{NatsBackend, NatsKnobs};
use std::net::IpAddr;
use std::process::Child;
use std::time::{Duration, Instant};

/// Every member on 127.0.0.1: a client and a cluster port each, monitoring beside the client
/// port (client + 4000, as the probes find it).
struct Ports {
    client: [u16; 3],
    cluster: [u16; 3],
}

impl Layout for Ports {
    fn ip(&self, _spec: &ServerSpec) -> IpAddr {
        IpAddr::from([127, 0, 0, 1])
    }
    fn client_port(&self, spec: &ServerSpec) -> u16 {
        self.client[usize::from(spec.id) - 1]
    }
    fn peer_ports(&self, spec: &ServerSpec) -> Vec<u16> {
        let i = usize::from(spec.id) - 1;
        vec![
            self.cluster[i],
            self.client[i] + lockbench_nats::server::MONITOR_OFFSET,
        ]
    }
}

/// A free client port whose monitoring port (+4000) is free too.
fn free_client_port() -> u16 {
    loop {
        let p = free_port();
        let monitor = p.checked_add(lockbench_nats::server::MONITOR_OFFSET);
        if monitor.is_some_and(|m| std::net::TcpListener::bind(("127.0.0.1", m)).is_ok()) {
            return p;
        }
    }
}

/// Real nats-servers, killed on drop (before their directory goes).
struct Servers {
    children: Vec<Child>,
    ports: Ports,
    pki: Pki,
    password: String,
    dir: TestDir,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Servers {
    /// The client address of member `i` (0-based).
    fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.ports.client[i])
    }

    /// The servers' output, for a failed assertion.
    fn logs(&self) -> String {
        Nats.servers()
            .iter()
            .map(|s| {
                let said = std::fs::read_to_string(self.dir.join(format!("{}.log", s.name)));
                format!("--- {}\n{}\n", s.name, said.unwrap_or_default())
            })
            .collect()
    }
}

/// The test's password for lockbench's user.
fn password(test: &str) -> String {
    format!("pw-{test}-{}-Qz4", std::process::id())
}

/// Lays out a secure profile in `dir/secure` (the managed cluster's files: certificates, the
/// passwords) and starts `members` of the three, secure when `secure`, plain otherwise.
fn start(dir: TestDir, test: &str, members: usize, secure: bool) -> Servers {
    let certs = dir.join("secure");
    let pki = Pki::ensure(&certs, &["127.0.0.1"]).unwrap();
    let pw = password(test);
    std::fs::write(certs.join("password"), format!("{pw}\n")).unwrap();
    std::fs::write(certs.join("admin-password"), format!("{pw}-admin\n")).unwrap();
    let ports = Ports {
        client: [(); 3].map(|_| free_client_port()),
        cluster: [(); 3].map(|_| free_port()),
    };
    let profile = lockbench_cluster::secure::load(&dir).unwrap().unwrap();
    let mut children = Vec::new();
    for spec in &Nats.servers()[..members] {
        let site = Site {
            topology: &ports,
            bind: IpAddr::from([127, 0, 0, 1]),
            root: dir.join(spec.name),
            log: None,
            cluster_token: "test".into(),
            secure: secure.then_some(&profile),
        };
        let log = dir.join(format!("{}.log", spec.name));
        children.push(spawn(&Nats, spec, &site, &log));
    }
    let servers = Servers {
        children,
        ports,
        pki,
        password: pw,
        dir,
    };
    // Listening: the INFO line comes in clear on a secure server too.
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0..members {
        while std::net::TcpStream::connect(servers.addr(i)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen within 30 s:\n{}",
                servers.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    servers
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

fn endpoints(addresses: Vec<String>, connection: Connection) -> Endpoints {
    let mut e = Endpoints::default();
    e.set(NATS, addresses);
    e.set_connection(NATS, connection);
    e
}

/// The default bucket (the one lockbench's user may use) with keys of the test's own.
fn knobs(test: &str) -> NatsKnobs {
    NatsKnobs {
        prefix: format!("{test}{}", std::process::id()),
        ttl: Duration::from_secs(5),
        ..NatsKnobs::default()
    }
}

/// `nats-kv` at `addr` with `connection` and `knobs` fails to connect, clearly (`wants`), in
/// time, naming the server and never `secret`.
async fn refused(
    addr: &str,
    connection: Connection,
    knobs: NatsKnobs,
    wants: &[&str],
    secret: &str,
) {
    let e = endpoints(vec![addr.to_string()], connection);
    let b = NatsBackend::new(&e, &knobs).unwrap();
    let (err, took) = first_connect_error(&b).await;
    assert_clear(&err, took, addr, wants, secret);
}

/// `nats-kv` over mutual TLS with a password as `lockbench`, on three secure servers: the
/// contract, the counters (`/connz` over HTTPS) and the observer; the user may not touch
/// another stream; plaintext HTTP gets no health; the cluster's own probes (HTTPS `/healthz`,
/// the leader check as the administrator after `INFO` and TLS) read the servers, and so does
/// the secure compose profile's healthcheck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_locks_over_mutual_tls_as_the_least_privileged_user() {
    let s = start(test_dir("nats", "locks"), "locks", 3, true);
    export("LB_TEST_NATS_SECURE_LOCKS", &s.password);
    let addrs = (0..3).map(|i| s.addr(i)).collect();
    let e = endpoints(addrs, settings(&s.pki, "LB_TEST_NATS_SECURE_LOCKS"));
    let b = NatsBackend::new(&e, &knobs("locks")).unwrap();
    // JetStream elects its meta leader once the routes are up (over TLS).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match b.connect(ClientId(0)).await {
            Ok(c) => {
                c.close().await;
                break;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("no bucket within 60 s: {e}\n{}", s.logs()),
        }
    }
    conformance::acquire_release_and_tokens_grow(&b).await;
    conformance::mutual_exclusion(&b, 3, 5).await;
    conformance::observer_names_the_holder(&b).await;

    // The counters read `/connz` over HTTPS; a backend of their own, so no connection of the
    // contract's is still closing; the servers count what arrived, which may lag the client.
    let broken = |logs: &str| logs.matches("TLS handshake error").count();
    let broken_before = broken(&s.logs());
    let b = NatsBackend::new(&e, &knobs("counters")).unwrap();
    let before = b.server_counters().await.unwrap();
    assert_eq!(before.servers.len(), 3, "{before:?}");
    let mut c = b.connect(ClientId(1)).await.unwrap();
    let Outcome::Ok(g) = c.acquire(KeyId(1)).await else {
        panic!("acquire over TLS")
    };
    assert!(c.release(g).await.is_ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // The client counts a message once written, after the release returned.
        let sent = c.requests_sent().unwrap();
        let counted = b.server_counters().await.unwrap().since(&before).unwrap();
        if counted == sent {
            break;
        }
        let logs = s.logs();
        assert!(
            Instant::now() < deadline,
            "counted {counted}, sent {sent}\n{logs}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.close().await;
    // The counters' question where a server listens ends its TLS as TLS ends.
    let logs = s.logs();
    assert_eq!(broken(&logs), broken_before, "{logs}");
    assert!(
        !format!("{b:?}").contains(&s.password),
        "the Debug shows the password"
    );

    // Least privilege: lockbench may not delete the bucket's stream, list streams, publish
    // elsewhere nor listen to another bucket; the server says so on the connection.
    let (tx, mut refusals) = tokio::sync::mpsc::unbounded_channel();
    let raw = async_nats::ConnectOptions::new()
        .require_tls(true)
        .add_root_certificates(s.pki.ca.clone())
        .add_client_certificate(s.pki.client_cert.clone(), s.pki.client_key.clone())
        .user_and_password("lockbench".into(), s.password.clone())
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                if let async_nats::Event::ServerError(e) = event {
                    let _ = tx.send(e.to_string());
                }
            }
        })
        .connect(s.addr(0))
        .await
        .unwrap();
    for denied in [
        "$JS.API.STREAM.DELETE.KV_lockbench",
        "$JS.API.STREAM.NAMES",
        "$KV.other.k0",
        "other",
    ] {
        raw.publish(denied, "".into()).await.unwrap();
        raw.flush().await.unwrap();
        let said = tokio::time::timeout(Duration::from_secs(2), refusals.recv()).await;
        let said = said.expect("a refusal within 2 s").unwrap();
        assert!(
            said.contains("Permissions Violation for Publish") && said.contains(denied),
            "{denied}: {said}"
        );
    }
    let _sub = raw.subscribe("$KV.other.>").await.unwrap();
    let said = tokio::time::timeout(Duration::from_secs(2), refusals.recv()).await;
    let said = said.expect("a refusal within 2 s").unwrap();
    assert!(
        said.contains("Permissions Violation for Subscription"),
        "{said}"
    );
    let own = async_nats::jetstream::new(raw.clone())
        .get_stream("KV_lockbench")
        .await;
    assert!(own.is_ok(), "the bucket's own stream info: {:?}", own.err());

    // Monitoring takes only TLS: a plaintext GET gets no health.
    let check = Nats.health_check(&s.addr(0));
    let plain = lockbench_cluster::exchange(&check).await;
    assert!(
        !plain.as_ref().is_ok_and(|r| Nats.health(r).healthy),
        "plaintext /healthz answered: {plain:?}"
    );
    // The cluster's probes: every server healthy over HTTPS, one leads the bucket's stream.
    let probe = lockbench_cluster::secure::probe(&s.dir).unwrap().unwrap();
    let mut leaders = Vec::new();
    for i in 0..3 {
        let addr = s.addr(i);
        let health = Nats.health_check(&addr);
        let health = lockbench_cluster::secure_exchange(&health, &probe, &Nats).await;
        let health = health.unwrap_or_else(|e| panic!("{addr} /healthz: {e:#}"));
        assert!(
            Nats.health(&health).healthy,
            "{}",
            String::from_utf8_lossy(&health)
        );
        let ask = Nats.leader_check(&addr).unwrap();
        let reply = lockbench_cluster::secure_exchange(&ask, &probe, &Nats).await;
        let reply = reply.unwrap_or_else(|e| panic!("{addr} leader check: {e:#}"));
        if Nats.is_leader(&reply) {
            leaders.push(addr);
        }
    }
    assert_eq!(leaders.len(), 1, "{leaders:?}");

    // The secure compose profile's healthcheck, run here on the profile's files: `/healthz`
    // over HTTPS with `openssl s_client`.
    let files = s.dir.join("secure").display().to_string();
    let check = Nats.compose_secure_healthcheck(s.ports.client[0], &files, "lockbench");
    assert_eq!(check[0], "CMD");
    let ran = std::process::Command::new(&check[1])
        .args(&check[2..])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{check:?}: {ran:?}");
    // nats-server asks monitoring clients for no certificate: TLS with the CA alone reads
    // `/healthz` too (what the docs say of the monitoring port).
    let monitor = s.ports.client[0] + lockbench_nats::server::MONITOR_OFFSET;
    let no_cert = format!(
        "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | openssl s_client -quiet \
         -verify_return_error -connect 127.0.0.1:{monitor} -CAfile {files}/ca.pem 2>/dev/null \
         | grep -q '\"ok\"'"
    );
    let ran = std::process::Command::new("bash")
        .args(["-c", &no_cert])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{no_cert}: {ran:?}");
}

/// A CA that did not sign the servers' certificate: names `nats.tls.ca` and its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_named_with_its_file() {
    let s = start(test_dir("nats", "wrong-ca"), "wrong-ca", 1, true);
    let other = Pki::ensure(&s.dir.join("other"), &["127.0.0.1"]).unwrap();
    export("LB_TEST_NATS_SECURE_WRONG_CA", &s.password);
    let mut c = settings(&s.pki, "LB_TEST_NATS_SECURE_WRONG_CA");
    c.tls.as_mut().unwrap().ca = Some(other.ca.clone());
    let ca = other.ca.display().to_string();
    let wants = ["unknown authority", "nats.tls.ca", &ca];
    refused(&s.addr(0), c, knobs("wrong-ca"), &wants, &s.password).await;
}

/// A wrong password: names the user and where the password came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_with_its_user_and_source() {
    let s = start(test_dir("nats", "wrong-pw"), "wrong-pw", 1, true);
    export(
        "LB_TEST_NATS_SECURE_WRONG_PW",
        &format!("{}-not", s.password),
    );
    let c = settings(&s.pki, "LB_TEST_NATS_SECURE_WRONG_PW");
    let wants = [
        "authorization violation",
        "`lockbench`",
        "nats.password_env",
    ];
    refused(&s.addr(0), c, knobs("wrong-pw"), &wants, &s.password).await;
}

/// A port nobody listens on: says so and where to fix it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_port_is_named() {
    let s = start(test_dir("nats", "wrong-port"), "wrong-port", 1, true);
    export("LB_TEST_NATS_SECURE_WRONG_PORT", &s.password);
    let c = settings(&s.pki, "LB_TEST_NATS_SECURE_WRONG_PORT");
    let addr = format!("127.0.0.1:{}", free_port());
    let wants = ["nothing listens", "`nats` endpoints"];
    refused(&addr, c, knobs("wrong-port"), &wants, &s.password).await;
}

/// No client certificate where the servers require one: says to set it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_client_certificate_is_named() {
    let s = start(test_dir("nats", "no-cert"), "no-cert", 1, true);
    export("LB_TEST_NATS_SECURE_NO_CERT", &s.password);
    let mut c = settings(&s.pki, "LB_TEST_NATS_SECURE_NO_CERT");
    let tls = c.tls.as_mut().unwrap();
    (tls.cert, tls.key) = (None, None);
    let wants = ["requires a client certificate", "nats.tls.cert"];
    refused(&s.addr(0), c, knobs("no-cert"), &wants, &s.password).await;
}

/// Plaintext against a server that takes only TLS: says to set `nats.tls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_only_server_is_named() {
    let s = start(test_dir("nats", "plain-on-tls"), "plain-on-tls", 1, true);
    export("LB_TEST_NATS_SECURE_PLAIN_ON_TLS", &s.password);
    let mut c = settings(&s.pki, "LB_TEST_NATS_SECURE_PLAIN_ON_TLS");
    c.tls = None;
    let wants = ["takes only TLS", "set `nats.tls`"];
    refused(&s.addr(0), c, knobs("plain-on-tls"), &wants, &s.password).await;
}

/// TLS against a server without TLS (a plain cluster's): says it does not speak TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_server_is_named() {
    let s = start(test_dir("nats", "tls-on-plain"), "tls-on-plain", 1, false);
    export("LB_TEST_NATS_SECURE_TLS_ON_PLAIN", &s.password);
    let c = settings(&s.pki, "LB_TEST_NATS_SECURE_TLS_ON_PLAIN");
    let wants = ["does not speak TLS", "remove `nats.tls`"];
    refused(&s.addr(0), c, knobs("tls-on-plain"), &wants, &s.password).await;
}

/// A bucket the user may not use: the server's refusal comes at once, naming `nats.bucket`
/// and the bucket the user may use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_the_user_may_not_use_is_named() {
    let s = start(test_dir("nats", "bucket"), "bucket", 1, true);
    export("LB_TEST_NATS_SECURE_BUCKET", &s.password);
    let c = settings(&s.pki, "LB_TEST_NATS_SECURE_BUCKET");
    let k = NatsKnobs {
        bucket: "other".into(),
        ..knobs("bucket")
    };
    let wants = ["refused", "`other`", "nats.bucket", "`lockbench`"];
    refused(&s.addr(0), c, k, &wants, &s.password).await;
}
