//! A standalone ZooKeeper of a test's own (Debian's `zookeeper.jar`, as the managed ensemble
//! runs) on free loopback ports, stopped when dropped: plaintext only, or with a TLS client
//! port too (`secureClientPort` through Netty, PEM stores, client certificates required, as
//! the secure managed cluster's members), for the tests of settings the managed ensemble does
//! not have.

use lockbench_conformance::secure::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A standalone ZooKeeper, stopped on drop.
pub struct Server {
    child: Child,
    /// The plaintext client port.
    pub port: u16,
    /// The TLS client port, when started with [`Tls`].
    pub secure_port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `127.0.0.1:<plaintext port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:<TLS port>`.
    pub fn secure_address(&self) -> String {
        format!("127.0.0.1:{}", self.secure_port.expect("started with TLS"))
    }
}

/// The files a TLS client port serves with: the CA its clients' certificates must end at and
/// the server's key and certificate in one PEM file.
pub struct Tls {
    pub ca: PathBuf,
    pub keystore: PathBuf,
}

/// Starts a standalone server in `dir` (with a TLS client port too when `tls` is given) and
/// waits, at most 30 s, until its plaintext port serves.
pub fn start(dir: &Path, tls: Option<&Tls>) -> Server {
    let port = free_port();
    let secure_port = tls.map(|_| free_port());
    let cfg = dir.join("zoo.cfg");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let mut text = format!(
        "tickTime=500\nminSessionTimeout=1000\ndataDir={}\nclientPortAddress=127.0.0.1\n\
         clientPort={port}\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,mntr\n",
        dir.join("data").display()
    );
    let mut classpath = String::from("/usr/share/java/zookeeper.jar");
    if let (Some(tls), Some(secure_port)) = (tls, secure_port) {
        text.push_str(&format!(
            "secureClientPortAddress=127.0.0.1\nsecureClientPort={secure_port}\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.clientAuth=need\nssl.hostnameVerification=false\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\n",
            tls.keystore.display(),
            tls.ca.display()
        ));
        // What the managed members add for Netty's TLS (`backends/zookeeper/src/server.rs`).
        classpath.push_str(":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar");
    }
    std::fs::write(&cfg, text).unwrap();
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let child = Command::new("java")
        .args(["-Xms32m", "-Xmx128m", "-XX:+UseSerialGC"])
        .args(["-cp", &classpath])
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(&cfg)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("java and zookeeper are installed (scripts/install-deps)");
    let server = Server {
        child,
        port,
        secure_port,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let serving = std::net::TcpStream::connect(("127.0.0.1", port))
            .ok()
            .and_then(|mut s| {
                use std::io::{Read, Write};
                s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
                s.write_all(b"srvr").ok()?;
                let mut answer = String::new();
                s.read_to_string(&mut answer).ok()?;
                Some(answer.contains("Mode: standalone"))
            })
            .unwrap_or(false);
        let tls_listening =
            secure_port.is_none_or(|p| std::net::TcpStream::connect(("127.0.0.1", p)).is_ok());
        if serving && tls_listening {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "zookeeper did not serve within 30 s: see {}",
            dir.join("server.log").display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
