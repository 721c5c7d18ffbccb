//! The System boundary: what lockbench knows about one server system, behind one
//! trait that the system's own crate implements.
//!
//! Why here: the backend crates (which implement [`System`]) and the crates that run servers
//! and inject faults (`lockbench-cluster`, `lockbench-chaos`, `lockbench-compose`, which
//! iterate over the systems `lockbench-registry` lists) both need the vocabulary, and core is
//! the one crate below both. Like the rest of core it is data and plain functions: no runtime,
//! no sockets. The shape follows Jepsen's `db` protocol (a system knows how to set up its
//! servers, which of them lead, what a kill does to them) and turmoil's host model (a server
//! is a named host with an address; faults are verbs on host names), with the doing left to
//! the cluster and the nemeses.
//!
//! A [`ServerSpec`] is one server of the managed cluster (its name, ports and host address),
//! pointing at the [`System`] that runs it; a [`Group`] is the servers clients use together
//! (one endpoints list, or a group reached through another's list, as the failover pair is
//! through its Sentinels). A system names its groups as consts of its crate.
//!
//! Faults only a system's servers can take are the system's too, offered through the trait
//! ([`System::faults`], [`System::clock_jump`], [`System::watched_leader`]) and written
//! against the chaos controller's narrow access ([`crate::ServerAccess`],
//! [`crate::FaultAccess`]): the crates that inject faults and generate the compose files ask
//! the system and never name one.

use crate::clock_jump::ClockJump;
use crate::connection::Connection;
use crate::knobs::{KnobSchema, Knobs};
use crate::launch::{Launch, Site};
use crate::server_access::{Pending, ServerAccess};
use crate::system_fault::SystemFault;
use serde::{Serialize, Serializer};
use std::net::SocketAddr;

/// What [`System::set_up_users`] returns: the set-up to await (on the caller's runtime; core
/// has none), its error naming the step, never a password.
pub type UsersSetUp<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>>;

/// A reply a system's own secure probe ([`System::secure_ask`]) will give.
pub type Asked<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u8>, String>> + Send + 'a>>;

/// Servers that clients use together: `zookeeper`, `redlock`, the failover pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Group {
    name: &'static str,
    list: &'static str,
}

impl Group {
    /// A group with its own endpoints list, named like it (`zookeeper = [...]`).
    pub const fn listed(name: &'static str) -> Group {
        Group { name, list: name }
    }

    /// A group with no list of its own, whose clients read `list` instead (the failover pair,
    /// found through its Sentinels' list).
    pub const fn through(name: &'static str, list: &'static str) -> Group {
        Group { name, list }
    }

    /// The group's name (its key in [`crate::Endpoints`] when it is listed).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The endpoints list its clients read.
    pub fn list(self) -> &'static str {
        self.list
    }

    /// `true` when the group has an endpoints list of its own.
    pub fn is_listed(self) -> bool {
        self.name == self.list
    }
}

impl Serialize for Group {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// One server process of the managed cluster.
#[derive(Clone, Copy, Debug)]
pub struct ServerSpec {
    /// Unique name, also the name of its directory and host (`zk1`, `etcd2`, `redlock5`).
    pub name: &'static str,
    /// The system that runs it.
    pub system: &'static dyn System,
    /// Which group (endpoints list) it is in.
    pub group: Group,
    /// 1-based member id within its group (ZooKeeper's `myid`).
    pub id: u8,
    /// The port clients use in the loopback topology.
    pub client_port: u16,
    /// Ports the members use among themselves in the loopback topology (ZooKeeper quorum and
    /// election ports, etcd's peer port); empty for Redis. Namespaces use
    /// [`System::standard_ports`].
    pub peer_ports: &'static [u16],
    /// Last octet of its host's address in the `netns` topology (`10.77.0.<octet>`).
    pub octet: u8,
}

impl ServerSpec {
    /// The members of this server's group (itself included), in start order.
    pub fn members(&self) -> impl Iterator<Item = &'static ServerSpec> + '_ {
        self.system
            .servers()
            .iter()
            .filter(move |s| s.group == self.group)
    }
}

/// One request/reply exchange with a server, as data: the address to dial, the bytes to send,
/// and when the reply is complete (else it ends when the server closes the connection).
///
/// Why data: the system knows what to ask and how to read the answer; the caller (the
/// managed cluster) owns the socket, the timeout and the concurrency (a paused server must not
/// hang `up`, and every server is asked at once). Core and the system crates stay free of a
/// runtime, and the reading is unit-tested on recorded replies.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// `host:port` to connect to.
    pub addr: String,
    /// What to send.
    pub request: Vec<u8>,
    /// `true` once the reply read so far is whole.
    pub complete: fn(&[u8]) -> bool,
}

/// What a health probe found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// A lock client can use the server.
    pub healthy: bool,
    /// Its role, when the system has roles (ZooKeeper's `leader` / `follower`).
    pub role: Option<String>,
}

/// How the leader of a group is found, for the `leader` and `followers` fault targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leadership {
    /// Each member is asked ([`System::leader_check`], read by [`System::is_leader`]); exactly
    /// one must say it leads (ZooKeeper, etcd).
    Elected,
    /// A group of one server: it is the leader (a standalone primary).
    Sole,
    /// The primary a watcher names, asked by the system itself
    /// ([`System::watched_leader`]; the failover pair: whom its Sentinels name).
    Watched,
    /// The group has no leader; why, for the error (independent Redlock servers).
    None(&'static str),
}

/// How the clients of a group reached through another's list ([`Group::through`]) find the
/// member to use: someone announces it, by its address (Sentinels name the failover pair's
/// primary). For what a place that cannot reach those addresses must refuse, saying why.
#[derive(Clone, Copy, Debug)]
pub struct Announced {
    /// Who announces it, as a note says it ("their Sentinels").
    pub by: &'static str,
    /// What they announce, as a note says it ("the primary").
    pub member: &'static str,
    /// The member they announce when the cluster starts (the initial primary).
    pub first: &'static ServerSpec,
}

/// Everything lockbench knows about one server system (ZooKeeper, etcd, Redis, ...),
/// implemented by the system's crate and listed once in `lockbench-registry`.
pub trait System: Send + Sync + 'static {
    /// The lowercase name used in status output and the versions map (`zookeeper`).
    fn name(&self) -> &'static str;

    /// Its servers in the managed cluster, in start order.
    fn servers(&self) -> &'static [ServerSpec];

    /// Its lock recipes (none for a system whose servers only serve another's recipes, the
    /// Sentinels).
    fn recipes(&self) -> &'static [crate::recipe::Recipe] {
        &[]
    }

    /// Its leader-election recipes, for the `failover` workload (none for a system that has
    /// none).
    fn elections(&self) -> &'static [crate::recipe::ElectionRecipe] {
        &[]
    }

    /// Its knob tables (connection settings and recipe knobs, with their defaults and
    /// validation), in the order a saved scenario lists them.
    fn knobs(&self) -> &'static [KnobSchema] {
        &[]
    }

    /// Moves this system's lock keys in `knobs` under `id`, so a run never meets keys another
    /// run left behind (a key that outlives its holder until a TTL or a lease); nothing for a
    /// system whose keys die with their session.
    fn separate_keys(&self, _knobs: &mut Knobs, _id: &str) -> Result<(), String> {
        Ok(())
    }

    /// Checks the connection settings an external cluster file gives `group` (one of this
    /// system's listed groups): what its clients honour passes, anything else fails naming
    /// the setting (a setting silently ignored would measure another connection than the file
    /// asks for). The default honours none: a bare address list.
    fn check_connection(&self, group: &str, connection: &Connection) -> Result<(), String> {
        connection.refuse(group, self.name(), &[])
    }

    /// The standard ports of a server (client port first, then peer ports), which it uses in
    /// its own host (the `netns` topology, a container).
    fn standard_ports(&self) -> &'static [u16];

    /// Ports besides the client port that lockbench's own probes reach (a monitoring port
    /// for health, version or counters), as offsets from the client port, in a server's own
    /// host and on loopback alike. The compose file publishes each beside the client port,
    /// so the probes work through the published ports too. None by default.
    fn probe_port_offsets(&self) -> &'static [u16] {
        &[]
    }

    /// The address clients write for a server listening on `addr` (`host:port`; etcd's is a
    /// URL).
    fn endpoint(&self, addr: SocketAddr) -> String {
        addr.to_string()
    }

    /// `true` when a group of this system is healthy only with exactly one member reporting
    /// the role `leader` (ZooKeeper: a split view during an election is not "up").
    fn single_leader(&self) -> bool {
        false
    }

    /// How the leader of `group` (one of this system's) is found.
    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::None("its servers have no leader")
    }

    /// For [`Leadership::Watched`]: asks the watchers of `members` (one of this system's
    /// groups) which member leads, through `access`; its name. `None` (the default): no
    /// group of this system is watched.
    fn watched_leader<'a>(
        &'a self,
        _members: &'a [&'static ServerSpec],
        _access: &'a dyn ServerAccess,
    ) -> Option<Pending<'a, Result<String, String>>> {
        None
    }

    /// How to ask the server at `endpoint` whether it leads (for [`Leadership::Elected`]).
    fn leader_check(&self, _endpoint: &str) -> Option<Exchange> {
        None
    }

    /// `true` when a reply to [`leader_check`](Self::leader_check) says the server leads.
    fn is_leader(&self, _reply: &[u8]) -> bool {
        false
    }

    /// How to promote the server at `endpoint` (a replica) to leader, for the `promote` fault
    /// (PostgreSQL: `SELECT pg_promote(false)`); `None` when the system has no promotion. The
    /// fault then waits until [`is_leader`](Self::is_leader) says the member leads.
    fn promote(&self, _endpoint: &str) -> Option<Exchange> {
        None
    }

    /// Whether a reply to [`promote`](Self::promote) accepted the request; `Err` says why not.
    fn promoted(&self, _reply: &[u8]) -> Result<(), String> {
        Err(format!("{} has no promotion", self.name()))
    }

    /// The faults only this system's servers take ([`SystemFault`]: `redis-failover`),
    /// which the server nemesis finds by their verb; none by default.
    fn faults(&self) -> &'static [&'static dyn SystemFault] {
        &[]
    }

    /// How a server of this system takes the `clock-jump` fault; `None` (the default): it
    /// cannot, and the fault is not applied to it.
    fn clock_jump(&self) -> Option<&'static dyn ClockJump> {
        None
    }

    /// The lines of this system's server logs that show what a slow or stalled disk did
    /// (leader changes, expired sessions, the server's own slow-sync warnings), counted over
    /// a `disk` fault's window; none by default.
    fn disk_signs(&self) -> &'static [crate::LogSign] {
        &[]
    }

    /// `true` when a restarted server comes back with no data (Redis without persistence),
    /// rather than with its data directory.
    fn restarts_empty(&self) -> bool {
        false
    }

    /// Servers (by name) that must be up before `spec` starts (a replica's primary).
    fn depends_on(&self, _spec: &ServerSpec) -> Vec<&'static str> {
        Vec::new()
    }

    /// How `spec` starts at `site` (its program, arguments and files), with the project's
    /// settings for this system: the same in managed mode and in a container.
    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch;

    /// What the server needs on this machine: programs (found on `PATH`) and files (absolute
    /// paths), which the managed cluster installs (`scripts/install-deps`) when one is missing.
    fn needs(&self) -> &'static [&'static str];

    /// Log targets (module paths of this system's client library) whose `TRACE` lines may hold
    /// a secret, which lockbench never records whatever the log filter says (async-nats writes
    /// each `CONNECT` with its password); none by default.
    fn secret_trace_targets(&self) -> &'static [&'static str] {
        &[]
    }

    /// How to ask the server at `endpoint` whether a lock client can use it.
    fn health_check(&self, endpoint: &str) -> Exchange;

    /// What a reply to [`health_check`](Self::health_check) says.
    fn health(&self, reply: &[u8]) -> Probe;

    /// `true` when `spec`, started with a site's [`Secure`](crate::launch::Secure) settings
    /// (`lockbench up --secure`), serves only TLS with client certificates and admits only
    /// lockbench's user; `false` (the default) when it starts as on a plain cluster. A group
    /// whose servers all say `true` gets the TLS and user settings in the cluster's endpoints.
    fn secured(&self, _spec: &ServerSpec) -> bool {
        false
    }

    /// `true` when a [`secured`](Self::secured) server admits only lockbench's user (Redis:
    /// the ACL user is in its config; etcd: [`set_up_users`](Self::set_up_users)), so clients
    /// log in as it; `false` when clients are admitted by their certificate alone.
    fn secure_user(&self) -> bool {
        false
    }

    /// Settings only this system reads (`Connection::system`) that a secure cluster's clients
    /// of a [`secured`](Self::secured) group use (ZooKeeper: the `chroot` its
    /// [`set_up_users`](Self::set_up_users) gives the user); none by default.
    fn secure_settings(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// On a secure cluster, what creates lockbench's user on a group's servers once they are
    /// up, when their launch cannot (etcd: its role, the user, `root` and `auth enable`):
    /// `endpoints` are the members' secure addresses, `client` the TLS settings to reach them
    /// with, `secure` the user, its password and the administrator's. It must be safe to run
    /// again on servers it set up. `None` (the default): nothing to do after the launch.
    fn set_up_users<'a>(
        &'a self,
        _endpoints: &'a [String],
        _client: &'a Connection,
        _secure: &'a crate::launch::Secure,
    ) -> Option<UsersSetUp<'a>> {
        None
    }

    /// The address clients write for a [`secured`](Self::secured) server listening on `addr`
    /// (etcd: an `https` URL); [`endpoint`](Self::endpoint) by default.
    fn secure_endpoint(&self, addr: SocketAddr) -> String {
        self.endpoint(addr)
    }

    /// On a secure cluster, what a probe sends first on its connection to log in as `user`
    /// (Redis: `AUTH user password`), before the health check; `None` when the system's
    /// health check needs no login. The request holds the password: it is sent, never logged.
    fn login(&self, _endpoint: &str, _user: &str, _password: &str) -> Option<Exchange> {
        None
    }

    /// On a secure cluster, a probe this system runs itself because it is no TLS exchange after
    /// a one-message [`login`](Self::login) (PostgreSQL: TLS starts after its `SSLRequest`,
    /// and SCRAM takes rounds): `ex`'s request sent over TLS with `tls` (the client
    /// certificate), logged in as the system's administrator with `admin_password`; the reply
    /// as [`exchange`](Self::health_check)'s readers take it. `None` (the default): the
    /// cluster's plain TLS exchange. The caller bounds it in time.
    fn secure_ask<'a>(
        &'a self,
        _ex: &'a Exchange,
        _tls: std::sync::Arc<rustls::ClientConfig>,
        _admin_password: &'a secrecy::SecretString,
    ) -> Option<Asked<'a>> {
        None
    }

    /// The administrator a probe logs in as on a secure cluster for requests lockbench's
    /// user may not send ([`Login::Admin`](crate::Login::Admin): Redis's scripts over every
    /// key, `REPLICAOF`); `None` (the default): such requests go as lockbench's user (a
    /// system whose own probe logs in as its administrator does so in
    /// [`secure_ask`](Self::secure_ask)).
    fn admin_user(&self) -> Option<&'static str> {
        None
    }

    /// `true` when a reply to [`login`](Self::login) accepts the user.
    fn logged_in(&self, _reply: &[u8]) -> bool {
        true
    }

    /// How to ask the server at `endpoint` for its version (for the results' environment
    /// block); `None` when this system reports none (the Sentinels: their Redis's version is
    /// the Redis servers').
    fn version_check(&self, _endpoint: &str) -> Option<Exchange> {
        None
    }

    /// The version a reply to [`version_check`](Self::version_check) names.
    fn version(&self, _reply: &[u8]) -> Option<String> {
        None
    }

    /// The official image of this system, for machines with a container registry.
    fn official_image(&self) -> &'static str;

    /// How a server starts on its [`official_image`](Self::official_image) when that
    /// differs from `launch` (its start on the servers' own image): ZooKeeper's image has its
    /// jars elsewhere and its own start script. `None` (the default): the same launch.
    fn official_image_launch(&self, _launch: &Launch) -> Option<Launch> {
        None
    }

    /// For a group of this system reached through another's list ([`Group::through`]): who
    /// announces the member its clients use ([`Announced`]); `None` (the default) for every
    /// group whose clients read their own list.
    fn announced(&self, _group: Group) -> Option<Announced> {
        None
    }

    /// The compose healthcheck of a server whose client port is `port` inside its container:
    /// what "a lock client can use it" means, asked inside the container.
    fn compose_healthcheck(&self, port: u16) -> Vec<String>;

    /// [`compose_healthcheck`](Self::compose_healthcheck) of a [`secured`](Self::secured)
    /// server on the secure compose cluster (`compose/secure.yml`): asked the way its clients
    /// reach it, over TLS with the client certificate, as `user` where the system admits only
    /// it. `files` is the profile's directory inside the container: `ca.pem`, `client.pem`,
    /// `client.key` and `password` (read when the check runs, never written in the check).
    /// By default the plain check (a system the profile leaves plain).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, user: &str) -> Vec<String> {
        let _ = (files, user);
        self.compose_healthcheck(port)
    }
}

impl std::fmt::Debug for dyn System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn System {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_reached_through_another_list_is_not_listed() {
        let pair = Group::through("failover", "sentinel");
        assert!(!pair.is_listed());
        assert_eq!(pair.list(), "sentinel");
        assert!(Group::listed("redis").is_listed());
        assert_eq!(serde_json::to_string(&pair).unwrap(), "\"failover\"");
    }
}
