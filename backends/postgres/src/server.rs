//! How a PostgreSQL server of the pair starts ([`System::launch`](lockbench_core::System::launch)):
//! `postgresql.conf`, `pg_hba.conf` and a start script, the same in managed mode and in a
//! container.
//!
//! Why a script and not the `postgres` command line alone: a server's first start is not a
//! plain exec. The primary needs `initdb` (and the `lockbench` database with
//! `pg_stat_statements`, made in single-user mode so no client ever sees a half-made
//! cluster); the replica needs `pg_basebackup -R` from whichever member is primary *now*
//! (after a promotion that is the other one); and PostgreSQL refuses to run as root, which
//! managed mode and containers here are. The script (`start-postgres.sh`, one per server, its
//! variables written above the shared body) decides from the data directory and the peer,
//! then `exec`s `postgres`, so the pid the cluster records is the postmaster's and its command
//! line names the data directory (how the cluster knows the process is its own).
//!
//! Running as root: as uid 0 the script runs every PostgreSQL program as the `postgres` user
//! inside a user namespace that maps that user to root outside (`unshare --user
//! --map-user=postgres --map-group=postgres`, util-linux 2.38 on Debian 12; it works inside
//! the managed cluster's network namespaces). The files stay root's, so a state directory
//! under `/root` (mode 700) is fine, and the cluster signals the server as it signals any
//! other. Docker's default seccomp profile refuses new user namespaces, so in a container
//! the script falls back to `setpriv --reuid=postgres` (it execs: the pid stays the
//! server's) after chowning the server's directory (on the compose volume) to `postgres`.
//! As any other user it runs the programs directly.
//!
//! The configuration is a lab setting: `pg_hba.conf` trusts every connection from the
//! cluster's own /24 (the managed bridge or the compose network) and from 127.0.0.1, with no
//! password, for clients and for replication alike. The servers listen only on those
//! private addresses; never copy this file to a server anyone else can reach.

use lockbench_core::launch::{File, Launch, Site};
use lockbench_core::{Exchange, ServerSpec};
use std::net::IpAddr;

/// Where Debian's `postgresql-15` puts its programs (not on `PATH`).
pub const BIN: &str = "/usr/lib/postgresql/15/bin";

/// What a server needs on this machine: the programs the start script runs (absolute paths:
/// Debian does not put them on `PATH`), the `pg_stat_statements` module it preloads, and the
/// shell and util-linux tools the script uses.
pub(crate) const NEEDS: [&str; 8] = [
    "/usr/lib/postgresql/15/bin/postgres",
    "/usr/lib/postgresql/15/bin/initdb",
    "/usr/lib/postgresql/15/bin/pg_basebackup",
    "/usr/lib/postgresql/15/bin/psql",
    "/usr/lib/postgresql/15/lib/pg_stat_statements.so",
    "bash",
    "unshare",
    "setpriv",
];

/// The database every client, probe and observer connects to (made by the primary's first
/// start).
pub const DATABASE: &str = "lockbench";
/// The user: the bootstrap superuser `initdb` makes, trusted from the cluster's addresses.
pub const USER: &str = "postgres";

/// The role that streams the primary's WAL to the replica on a secure cluster (`REPLICATION`
/// and nothing else; its password is derived from the administrator's, [`crate::secure::replication_password`]).
pub const REPLICATION_USER: &str = "lockbench_replication";

/// The body of the start script, shared by every server.
const START_BODY: &str = include_str!("start-postgres.sh");

/// The config files and the start script (`bash <root>/start-postgres.sh`).
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let root = site.root.clone();
    let conf = root.join("postgresql.conf");
    let hba = root.join("pg_hba.conf");
    let script = root.join("start-postgres.sh");
    let file = |path: std::path::PathBuf, contents: String| File {
        path,
        contents,
        only_if_absent: false,
    };
    let mut files = vec![
        file(conf.clone(), postgresql_conf(spec, site, &hba)),
        file(hba, pg_hba(spec, site)),
        file(script.clone(), start_script(spec, site, &conf)),
    ];
    if let Some(secure) = site.secure {
        files.push(file(
            root.join("roles.sql"),
            crate::secure::roles_sql(secure),
        ));
        files.push(file(root.join("pgpass"), crate::secure::pgpass(secure)));
    }
    Launch {
        program: "bash",
        args: vec![script.display().to_string()],
        dirs: vec![root.clone()],
        remove: Vec::new(),
        files,
    }
}

/// A value for a shell variable assignment: single-quoted.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The script's variables (this server's name, id, directories and its peers' addresses as
/// `host:port`), then the shared body.
fn start_script(spec: &ServerSpec, site: &Site, conf: &std::path::Path) -> String {
    let topo = site.topology;
    let peers: Vec<String> = spec
        .members()
        .filter(|m| m.name != spec.name)
        .map(|m| format!("{}:{}", topo.ip(m), topo.client_port(m)))
        .collect();
    // On a secure cluster: the CA, the server's certificate and key to copy into the server's
    // directory (mode 0600: PostgreSQL refuses a key others may read).
    let tls = site.secure.map_or(String::new(), |s| {
        format!(
            "tls_ca={}\ntls_cert={}\ntls_key={}\n",
            sh(&s.ca.display().to_string()),
            sh(&s.cert.display().to_string()),
            sh(&s.key.display().to_string()),
        )
    });
    format!(
        "#!/usr/bin/env bash\n\
         # Written by lockbench on every start: how {name} starts (see \
         backends/postgres/src/server.rs).\n\
         name={name}\nid={id}\nroot={root}\ndata={data}\nconf={conf}\npeers={peers}\n{tls}\n{START_BODY}",
        name = spec.name,
        id = spec.id,
        root = sh(&site.root.display().to_string()),
        data = sh(&site.data().display().to_string()),
        conf = sh(&conf.display().to_string()),
        peers = sh(&peers.join(" ")),
    )
}

/// `postgresql.conf`: where it listens, what it preloads, streaming replication, enough
/// connections for lockbench's herd and scale runs.
fn postgresql_conf(spec: &ServerSpec, site: &Site, hba: &std::path::Path) -> String {
    format!(
        "# Written by lockbench on every start (backends/postgres/src/server.rs); a lab setting.\n\
         listen_addresses = '{bind}'\n\
         port = {port}\n\
         # Unix sockets off: a socket path under the state directory can pass the 107-byte limit.\n\
         unix_socket_directories = ''\n\
         hba_file = '{hba}'\n\
         # lockbench's herd and scale runs open up to 1,000 sessions; the replica must allow\n\
         # at least as many as the primary (hot standby refuses to start otherwise).\n\
         max_connections = 1100\n\
         shared_buffers = 64MB\n\
         # Request counts from the server's own statistics (the recipes' server counters).\n\
         shared_preload_libraries = 'pg_stat_statements'\n\
         wal_level = replica\n\
         hot_standby = on\n\
         max_wal_senders = 10\n\
         # A replica that was down for a while catches up from the primary's WAL, no slot.\n\
         wal_keep_size = 256MB\n\
         # A replica retries its primary every 0.5 s (default 5 s): a restarted pair is whole\n\
         # again in about a second.\n\
         wal_retrieve_retry_interval = 500ms\n\
         huge_pages = off\n\
         # Statements slower than a second are logged: a stalled commit's sign in the server's\n\
         # own words (the disk fault counts them).\n\
         log_min_duration_statement = 1000\n\
         timezone = 'UTC'\n\
         log_timezone = 'UTC'\n\
         log_line_prefix = '%m [%p] %q%a '\n{ssl}",
        bind = site.bind,
        port = site.topology.client_port(spec),
        hba = hba.display(),
        ssl = if site.secure.is_some() {
            crate::secure::ssl_conf(&site.root)
        } else {
            String::new()
        },
    )
}

/// `pg_hba.conf`: trust (no password) from the cluster's /24 and 127.0.0.1, for clients and
/// replication; a lab setting (see the module docs).
fn pg_hba(spec: &ServerSpec, site: &Site) -> String {
    let net = match site.topology.ip(spec) {
        IpAddr::V4(ip) => {
            let [a, b, c, _] = ip.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(ip) => format!("{ip}/128"),
    };
    if let Some(secure) = site.secure {
        return crate::secure::pg_hba(&net, &secure.user);
    }
    format!(
        "# Written by lockbench on every start. A LAB SETTING: every connection from the\n\
         # cluster's own network ({net}) and from 127.0.0.1 is trusted without a password.\n\
         # TYPE DATABASE     USER ADDRESS          METHOD\n\
         host   all          all  {net:<16} trust\n\
         host   replication  all  {net:<16} trust\n\
         host   all          all  127.0.0.1/32     trust\n\
         host   replication  all  127.0.0.1/32     trust\n"
    )
}

/// The compose healthcheck on the secure compose cluster: over TLS with the client certificate
/// (verified against 127.0.0.1, which the server certificate names), as `user` with the
/// profile's password (read when the check runs). That user may not see the WAL receiver's
/// status (`pg_read_all_stats`), only that one runs: a replica is healthy while its receiver
/// runs.
pub(crate) fn compose_secure_healthcheck(port: u16, files: &str, user: &str) -> Vec<String> {
    let sql = "SELECT NOT pg_is_in_recovery() OR EXISTS (SELECT 1 FROM pg_stat_wal_receiver)";
    let check = format!(
        "PGPASSWORD=\"$(cat {files}/password)\" PGSSLMODE=verify-full \
         PGSSLROOTCERT={files}/ca.pem PGSSLCERT={files}/client.pem PGSSLKEY={files}/client.key \
         {BIN}/psql -h 127.0.0.1 -p {port} -U {user} -d {DATABASE} -tAqX -c \"{sql}\" | grep -qx t"
    );
    ["CMD", "bash", "-c", &check].map(String::from).to_vec()
}

/// The compose healthcheck, asked inside the container: the primary, or a replica that
/// streams from it (the same rule as [`crate::probe::health`]).
pub(crate) fn compose_healthcheck(port: u16) -> Vec<String> {
    let sql = "SELECT NOT pg_is_in_recovery() OR coalesce((SELECT status = 'streaming' \
               FROM pg_stat_wal_receiver), false)";
    let check = format!(
        "{BIN}/psql -h 127.0.0.1 -p {port} -U {USER} -d {DATABASE} -tAqX -c \"{sql}\" | grep -qx t"
    );
    ["CMD", "bash", "-c", &check].map(String::from).to_vec()
}

/// Start order: the replica after the first member, the initial primary.
pub(crate) fn depends_on(spec: &ServerSpec) -> Vec<&'static str> {
    spec.members()
        .filter(|m| m.id == 1 && spec.id != 1)
        .map(|m| m.name)
        .collect()
}

/// How to ask the server at `endpoint` a question, as one [`Exchange`] (see `probe.rs`).
pub(crate) fn ask(endpoint: &str, sql: &str) -> Exchange {
    Exchange {
        addr: endpoint.to_string(),
        request: crate::probe::request(USER, DATABASE, sql),
        complete: crate::probe::complete,
    }
}
