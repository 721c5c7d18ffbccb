//! ZooKeeper as a [`System`]: the managed ensemble's three members, their ports, and the
//! rules lockbench applies to them (one leader or not healthy; a restart keeps its data).

use crate::server;
use lockbench_core::knobs::KnobSchema;
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};

/// The chroot lockbench's user works under on a secure managed cluster (`lockbench up
/// --secure`), made by [`crate::secure::set_up`].
pub const SECURE_CHROOT: &str = "/lockbench-secure";

/// The ensemble's group (`zookeeper = [...]` in an endpoints file).
pub const ZOOKEEPER: Group = Group::listed(crate::GROUP);

/// The ZooKeeper system.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZooKeeper;

const fn member(name: &'static str, id: u8, client: u16, peers: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: &ZooKeeper,
        group: ZOOKEEPER,
        id,
        client_port: client,
        peer_ports: peers,
        octet: 10 + id,
    }
}

/// The managed ensemble (loopback ports: client, quorum, election).
pub(crate) const SERVERS: [ServerSpec; 3] = [
    member("zk1", 1, 12181, &[12888, 13888]),
    member("zk2", 2, 12182, &[12889, 13889]),
    member("zk3", 3, 12183, &[12890, 13890]),
];

impl System for ZooKeeper {
    /// A new leader's election (one `LEADING` line per election), a session the leader
    /// expired, and a transaction log sync over a second (ZooKeeper's own warning).
    fn disk_signs(&self) -> &'static [lockbench_core::LogSign] {
        &[
            lockbench_core::LogSign {
                what: "leader elected",
                line_has: "LEADING - LEADER ELECTION TOOK",
            },
            lockbench_core::LogSign {
                what: "session expired",
                line_has: "Expiring session",
            },
            lockbench_core::LogSign {
                what: "log sync over 1 s",
                line_has: "fsync-ing the write ahead log",
            },
        ]
    }

    fn name(&self) -> &'static str {
        "zookeeper"
    }

    /// TLS (mutual TLS, a server name), a chroot and a digest user (`crate::tls`,
    /// `crate::secure`). The settings' shape only: the files are read when a backend is made.
    fn check_connection(
        &self,
        group: &str,
        connection: &lockbench_core::Connection,
    ) -> Result<(), String> {
        connection.refuse(
            group,
            "ZooKeeper",
            &["tls", "chroot", "user", "password_env", "password_file"],
        )?;
        connection
            .require_user_with_password(group, "ZooKeeper's digest identity is user:password")?;
        if let Some(tls) = &connection.tls {
            crate::tls::check(tls)?;
        }
        crate::connect::chroot(connection).map(|_| ())
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    fn elections(&self) -> &'static [lockbench_core::ElectionRecipe] {
        crate::elections::ELECTIONS
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[2181, 2888, 3888]
    }

    fn single_leader(&self) -> bool {
        true
    }

    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::srvr(endpoint))
    }

    /// `Mode: leader`.
    fn is_leader(&self, reply: &[u8]) -> bool {
        server::mode(&String::from_utf8_lossy(reply)).as_deref() == Some("leader")
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// `secureClientPort` through Netty with client certificates, quorum TLS (`server.rs`).
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    /// Clients log in as digest user `lockbench` (`addauth digest`), so every node they create
    /// carries the ACL `auth::cdrwa`: only that user may touch it (`crate::secure`).
    fn secure_user(&self) -> bool {
        true
    }

    /// The user's chroot, [`SECURE_CHROOT`]: a secure run's nodes (creator-only ACLs) never
    /// sit where a plain run on the same ensemble, after `lockbench up`, must create nodes.
    fn secure_settings(&self) -> &'static [(&'static str, &'static str)] {
        &[("chroot", SECURE_CHROOT)]
    }

    /// [`crate::secure::set_up`]: the chroot, created over TLS as the user with ACL
    /// `auth::cdrwa` (ZooKeeper keeps no user list: the identity lives in the ACLs).
    fn set_up_users<'a>(
        &'a self,
        endpoints: &'a [String],
        client: &'a lockbench_core::Connection,
        secure: &'a lockbench_core::launch::Secure,
    ) -> Option<lockbench_core::system::UsersSetUp<'a>> {
        Some(Box::pin(async move {
            let ensemble = endpoints.join(",");
            let tls = client.tls.as_ref();
            crate::secure::set_up(
                &ensemble,
                tls,
                SECURE_CHROOT,
                &secure.user,
                &secure.password,
            )
            .await
        }))
    }

    fn needs(&self) -> &'static [&'static str] {
        &server::NEEDS
    }

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::srvr(endpoint)
    }

    /// Serving as `leader` or `follower` (not while electing, not `standalone`).
    fn health(&self, reply: &[u8]) -> Probe {
        let role = server::mode(&String::from_utf8_lossy(reply));
        let healthy = matches!(role.as_deref(), Some("leader" | "follower"));
        Probe { healthy, role }
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::srvr(endpoint))
    }

    fn version(&self, reply: &[u8]) -> Option<String> {
        server::version(&String::from_utf8_lossy(reply))
    }

    fn official_image(&self) -> &'static str {
        "zookeeper:3.8.0"
    }

    /// The image's own start script on the same `zoo.cfg` (its jars are elsewhere).
    fn official_image_launch(&self, launch: &Launch) -> Option<Launch> {
        server::on_official_image(launch)
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        let check = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo srvr >&3 && grep -qE 'Mode: (leader|follower)' <&3"
        );
        ["CMD", "bash", "-c", &check].map(String::from).to_vec()
    }

    /// `srvr` on the TLS client port (served there like any request), with the client
    /// certificate, through `openssl s_client` (the image has it: `ca-certificates` needs it).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, _user: &str) -> Vec<String> {
        let check = format!(
            "echo srvr | openssl s_client -quiet -connect 127.0.0.1:{port} -CAfile {files}/ca.pem \
             -cert {files}/client.pem -key {files}/client.key 2>/dev/null \
             | grep -qE 'Mode: (leader|follower)'"
        );
        ["CMD", "bash", "-c", &check].map(String::from).to_vec()
    }
}
