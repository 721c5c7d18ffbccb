//! How a ZooKeeper member starts ([`System::launch`](lockbench_core::System::launch)):
//! `zoo.cfg`, logging and the JVM command line, the same in managed mode and in a container;
//! and the `srvr` four-letter command, used both as health check (`Mode: leader|follower`)
//! and version source.
//!
//! Gotcha: Debian's `zookeeper.jar` names its dependencies in its manifest `Class-Path`, but not
//! an SLF4J binding; with only the jar and a `log4j.properties` directory on the class path the
//! server logs *nothing* ("Defaulting to no-operation (NOP) logger"). So the class path also
//! carries `slf4j-log4j12.jar` and `log4j-1.2.jar` (both pulled in by the `zookeeper` package),
//! and `log4j.properties` sends everything to stdout, which the spawner sends to `server.log`.

use lockbench_core::launch::{File, Launch, Site};
use lockbench_core::{Exchange, ServerSpec};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Jars the server's class path is made of (the first one names the rest in its manifest).
const JARS: [&str; 3] = [NEEDS[1], NEEDS[2], NEEDS[3]];

/// The jars Netty's TLS needs beyond those `zookeeper.jar` names (from `libnetty-java`, which
/// the `zookeeper` package depends on).
const NETTY_TLS: [&str; 2] = [
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
];

/// The JVM and the jars.
pub(crate) const NEEDS: [&str; 4] = [
    "java",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
];

const LOG4J: &str = "\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
";

/// `zoo.cfg`, `data/myid` and `conf/log4j.properties`, and the `java` command line.
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let conf = site.root.join("conf");
    let cfg = site.root.join("zoo.cfg");
    let mut classpath: Vec<String> = JARS.iter().map(|j| j.to_string()).collect();
    if site.secure.is_some() {
        // Netty's TLS needs its codec, which Debian's `zookeeper.jar` manifest leaves out of
        // its class path (`ClassNotFoundException: io.netty.handler.codec.ByteToMessageDecoder`).
        classpath.extend(NETTY_TLS.map(String::from));
    }
    classpath.push(conf.display().to_string());
    let args = [
        "-Xms32m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        &classpath.join(":"),
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        &cfg.display().to_string(),
    ];
    let file = |path: PathBuf, contents: String| File {
        path,
        contents,
        only_if_absent: false,
    };
    Launch {
        program: "java",
        args: args.iter().map(|a| a.to_string()).collect(),
        dirs: vec![site.data(), conf.clone()],
        remove: Vec::new(),
        files: vec![
            file(conf.join("log4j.properties"), LOG4J.into()),
            file(site.data().join("myid"), format!("{}\n", spec.id)),
            file(cfg, zoo_cfg(spec, site)),
        ],
    }
}

/// How a member starts on the official image, whose jars are elsewhere and which logs with
/// logback: the same files, then the image's `zkServer.sh start-foreground` on the same
/// `zoo.cfg` (the last argument of [`launch`]'s command line).
pub(crate) fn on_official_image(launch: &Launch) -> Option<Launch> {
    let cfg = launch.args.last()?;
    Some(Launch {
        program: "zkServer.sh",
        args: vec!["start-foreground".into(), cfg.clone()],
        ..launch.clone()
    })
}

fn zoo_cfg(spec: &ServerSpec, site: &Site) -> String {
    let topo = site.topology;
    let mut cfg = format!(
        "# Written by lockbench; rewritten on every start.\n\
         tickTime=500\n\
         initLimit=10\n\
         syncLimit=5\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=20000\n\
         dataDir={}\n\
         {port}PortAddress={}\n\
         {port}Port={}\n\
         maxClientCnxns=0\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=mntr,srvr,ruok,stat,cons,wchs\n\
         standaloneEnabled=false\n\
         reconfigEnabled=false\n",
        site.data().display(),
        site.bind,
        topo.client_port(spec),
        port = if site.secure.is_some() {
            "secureClient"
        } else {
            "client"
        },
    );
    if let Some(secure) = site.secure {
        // TLS only (no `clientPort`), through Netty, clients presenting a certificate of the
        // CA (`clientAuth=need`; their certificates name no host, so no hostname check of
        // clients); the members to each other over TLS too (`sslQuorum`), each checking the
        // other's certificate and address. The four-letter words (`srvr`, `mntr`) are served
        // on the TLS port like any request.
        cfg.push_str("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n");
        cfg.push_str("sslQuorum=true\nssl.clientAuth=need\nssl.hostnameVerification=false\n");
        for prefix in ["ssl", "ssl.quorum"] {
            let _ = write!(
                cfg,
                "{prefix}.keyStore.location={}\n{prefix}.keyStore.type=PEM\n\
                 {prefix}.trustStore.location={}\n{prefix}.trustStore.type=PEM\n",
                secure.keystore.display(),
                secure.ca.display(),
            );
        }
    }
    if site.bind.is_unspecified() {
        // Bound to every address (a container): the quorum ports too, not only the address
        // the peers know this member by.
        cfg.push_str("quorumListenOnAllIPs=true\n");
    }
    for m in spec.members() {
        let peers = topo.peer_ports(m);
        let _ = writeln!(
            cfg,
            "server.{}={}:{}:{}",
            m.id,
            topo.ip(m),
            peers[0],
            peers[1]
        );
    }
    cfg
}

/// The `srvr` four-letter command (the server closes the connection after its reply): the
/// health check (`Mode: leader|follower`) and the version source.
pub(crate) fn srvr(endpoint: &str) -> Exchange {
    Exchange {
        addr: endpoint.to_string(),
        request: b"srvr".to_vec(),
        complete: |_| false,
    }
}

/// `leader` / `follower` / `standalone` / `observer` from a `srvr` reply; `None` while the
/// member is not serving (no quorum, election in progress).
pub(crate) fn mode(srvr: &str) -> Option<String> {
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
}

/// `3.8.0` from `Zookeeper version: 3.8.0-${mvngit.commit.id}, built on ...`: Debian's build
/// leaves the git placeholder unexpanded, so it is cut off.
pub(crate) fn version(srvr: &str) -> Option<String> {
    let v = srvr
        .lines()
        .find_map(|l| l.strip_prefix("Zookeeper version: "))?;
    let v = v.split(',').next()?.trim();
    let v = v.strip_suffix("-${mvngit.commit.id}").unwrap_or(v);
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_srvr() {
        let text = "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n\
                    Latency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(mode(text).as_deref(), Some("follower"));
        assert_eq!(version(text).as_deref(), Some("3.8.0"));
        assert_eq!(
            mode("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
    }

    /// A secure site's member: a TLS client port through Netty (no plaintext one), client
    /// certificates required, quorum TLS, PEM stores; Netty's codec on the class path.
    #[test]
    fn a_secure_member_serves_only_tls() {
        use lockbench_core::launch::{Loopback, Secure};
        let secure = Secure::in_dir("/s".as_ref(), "lockbench", "".into(), "".into());
        let spec = &crate::system::SERVERS[0];
        let site = Site {
            topology: &Loopback,
            bind: [127, 0, 0, 1].into(),
            root: "/s/zk1".into(),
            log: None,
            cluster_token: "t".into(),
            secure: Some(&secure),
        };
        let cfg = zoo_cfg(spec, &site);
        assert!(!cfg.contains("\nclientPort"), "{cfg}");
        for want in [
            "secureClientPort=12181",
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.clientAuth=need",
            "sslQuorum=true",
            "ssl.keyStore.location=/s/server-keystore.pem",
            "ssl.quorum.trustStore.location=/s/ca.pem",
            "ssl.trustStore.type=PEM",
        ] {
            assert!(cfg.contains(want), "{want}: {cfg}");
        }
        let args = launch(spec, &site).args.join(" ");
        assert!(args.contains("netty-codec.jar"), "{args}");
        let plain = Site {
            secure: None,
            ..site
        };
        assert!(zoo_cfg(spec, &plain).contains("\nclientPort=12181"));
        assert!(!launch(spec, &plain).args.join(" ").contains("netty"));
    }
}
