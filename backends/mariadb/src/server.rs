//! How a MariaDB server of the pair starts ([`System::launch`](lockbench_core::System::launch)):
//! an option file, the setup every start runs, and a start script, the same in managed mode
//! and in a container.
//!
//! Why a script and not the `mariadbd` command line alone: a server's first start is not a
//! plain exec. The primary needs `mariadb-install-db`; a replica needs to know which member is
//! the primary *now* (after a promotion that is the other one), and a former primary must not
//! come back as a second primary. The script (`start-mariadb.sh`, its variables written above
//! the shared body) decides from the data directory and the peer, writes the init file that
//! sets the role, then `exec`s `mariadbd`, so the pid the cluster records is the server's.
//!
//! The plain configuration is a lab setting: user `lockbench` has no password and every
//! privilege, from anywhere (a secure cluster's accounts are in `secure.rs`). The servers listen only on the cluster's private addresses; never copy these
//! files to a server anyone else can reach.

use lockbench_core::launch::{File, Launch, Site};
use lockbench_core::{Exchange, ServerSpec};
use secrecy::ExposeSecret;

/// What a server needs on this machine: the server, its installer and the command-line
/// client the start script asks the peers with.
pub(crate) const NEEDS: [&str; 4] = ["mariadbd", "mariadb-install-db", "mariadb", "bash"];

/// The database every client, probe and observer uses (made by the setup on every start).
pub const DATABASE: &str = "lockbench";
/// The user: no password, every privilege (a lab setting).
pub const USER: &str = "lockbench";
/// The fencing sequence, in [`DATABASE`].
pub const FENCE: &str = "lockbench.fence";

/// The body of the start script, shared by every server.
const START_BODY: &str = include_str!("start-mariadb.sh");

/// The option file, the setup and the start script (`bash <root>/start-mariadb.sh`).
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let root = site.root.clone();
    let conf = root.join("mariadb.cnf");
    let script = root.join("start-mariadb.sh");
    let file = |path: std::path::PathBuf, contents: String| File {
        path,
        contents,
        only_if_absent: false,
    };
    Launch {
        program: "bash",
        args: vec![script.display().to_string()],
        dirs: vec![root.clone()],
        remove: Vec::new(),
        files: vec![
            file(conf.clone(), options(spec, site)),
            file(root.join("setup.sql"), setup_sql(site.secure)),
            file(script.clone(), start_script(spec, site, &conf)),
        ],
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
    // directory, the administrator's password for asking the peer, and the replica's login.
    let (tls, auth) = match site.secure {
        Some(s) => (
            format!(
                "tls_ca={}\ntls_cert={}\ntls_key={}\nadmin_password={}\n",
                sh(&s.ca.display().to_string()),
                sh(&s.cert.display().to_string()),
                sh(&s.key.display().to_string()),
                sh(s.admin_password.expose_secret()),
            ),
            crate::secure::master_auth(s, &site.root),
        ),
        None => (String::new(), format!("MASTER_USER='{USER}'")),
    };
    format!(
        "#!/usr/bin/env bash\n\
         # Written by lockbench on every start: how {name} starts (see \
         backends/mariadb/src/server.rs).\n\
         name={name}\nid={id}\nroot={root}\ndata={data}\nconf={conf}\npeers={peers}\n\
         master_auth={auth}\n{tls}\n{START_BODY}",
        name = spec.name,
        id = spec.id,
        root = sh(&site.root.display().to_string()),
        data = sh(&site.data().display().to_string()),
        conf = sh(&conf.display().to_string()),
        peers = sh(&peers.join(" ")),
        auth = sh(&auth),
    )
}

/// What every start runs first, never written to the binary log: the database, the accounts
/// (a plain cluster's or a secure one's, made again each time, so a cluster can change from
/// one to the other) and the fencing sequence, where missing.
fn setup_sql(secure: Option<&lockbench_core::launch::Secure>) -> String {
    let accounts = match secure {
        Some(s) => crate::secure::accounts_sql(s),
        None => format!(
            "CREATE OR REPLACE USER '{USER}'@'%';\n\
             GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%';\n\
             DROP USER IF EXISTS '{admin}'@'%', '{repl}'@'%';\n",
            admin = crate::secure::ADMIN_USER,
            repl = crate::secure::REPLICATION_USER,
        ),
    };
    format!(
        "-- Written by lockbench on every start (backends/mariadb/src/server.rs).\n\
         SET sql_log_bin = 0;\n\
         CREATE DATABASE IF NOT EXISTS {DATABASE};\n\
         {accounts}\
         CREATE SEQUENCE IF NOT EXISTS {FENCE} START WITH 1 INCREMENT BY 1 CACHE 1000;\n"
    )
}

/// `mariadb.cnf`: where it listens, its binary log (GTIDs, every event kept), enough
/// connections for lockbench's herd and scale runs, and `performance_schema` for the
/// observer (who holds a lock) and the counters (the run's statements).
fn options(spec: &ServerSpec, site: &Site) -> String {
    let root = site.root.display();
    format!(
        "# Written by lockbench on every start (backends/mariadb/src/server.rs); a lab setting.\n\
         [mariadbd]\n\
         datadir = {data}\n\
         bind-address = {bind}\n\
         port = {port}\n\
         socket = {root}/mariadbd.sock\n\
         pid-file = {root}/mariadbd.pid\n\
         tmpdir = {root}/tmp\n\
         init-file = {root}/init.sql\n\
         skip-name-resolve\n\
         # Every event kept, replicated ones too: any member can bring a new replica up to date.\n\
         log-bin = binlog\n\
         log-slave-updates\n\
         binlog-format = ROW\n\
         # lockbench's herd and scale runs open up to 1,000 sessions.\n\
         max-connections = 1100\n\
         innodb-buffer-pool-size = 64M\n\
         innodb-log-file-size = 16M\n\
         # Who holds a lock (session_connect_attrs) and the run's statements (the digests),\n\
         # and no history tables: about 70 MiB less than the defaults at 1,100 connections.\n\
         performance-schema = ON\n\
         performance-schema-instrument = 'statement/%=ON'\n\
         performance-schema-consumer-statements-digest = ON\n\
         performance-schema-digests-size = 10000\n\
         performance-schema-max-digest-length = 256\n\
         performance-schema-max-sql-text-length = 256\n\
         performance-schema-session-connect-attrs-size = 512\n\
         performance-schema-max-table-instances = 200\n\
         performance-schema-max-table-handles = 200\n\
         performance-schema-events-statements-history-size = 0\n\
         performance-schema-events-statements-history-long-size = 0\n\
         performance-schema-events-waits-history-size = 0\n\
         performance-schema-events-waits-history-long-size = 0\n\
         performance-schema-events-stages-history-size = 0\n\
         performance-schema-events-stages-history-long-size = 0\n\
         performance-schema-events-transactions-history-size = 0\n\
         performance-schema-events-transactions-history-long-size = 0\n\
         character-set-server = utf8mb4\n{tls}",
        data = site.data().display(),
        bind = site.bind,
        port = site.topology.client_port(spec),
        tls = if site.secure.is_some() {
            crate::secure::tls_options(&site.root)
        } else {
            String::new()
        },
    )
}

/// The compose healthcheck, asked inside the container: the primary, or a replica whose
/// replication threads both run (the same rule as the health probe).
pub(crate) fn compose_healthcheck(port: u16) -> Vec<String> {
    let check = format!(
        "mariadb --no-defaults -h 127.0.0.1 -P {port} -u {USER} -N -B -e \"{HEALTH_SQL}\" \
         | grep -qE '^0|ON$'"
    );
    ["CMD", "bash", "-c", &check].map(String::from).to_vec()
}

/// The compose healthcheck on the secure compose cluster: over TLS with the client
/// certificate (the server's verified against 127.0.0.1, which it names), as `user` with the
/// profile's password (read when the check runs, passed in the environment).
pub(crate) fn compose_secure_healthcheck(port: u16, files: &str, user: &str) -> Vec<String> {
    let check = format!(
        "MYSQL_PWD=\"$(cat {files}/password)\" mariadb --no-defaults -h 127.0.0.1 -P {port} \
         -u {user} --ssl --ssl-ca={files}/ca.pem --ssl-cert={files}/client.pem \
         --ssl-key={files}/client.key --ssl-verify-server-cert -N -B -e \"{HEALTH_SQL}\" \
         | grep -qE '^0|ON$'"
    );
    ["CMD", "bash", "-c", &check].map(String::from).to_vec()
}

/// The health and role question: `read_only`, and for a replica whether both replication
/// threads run (`Slave_running` is `ON` only then).
pub(crate) const HEALTH_SQL: &str = "SELECT @@read_only, (SELECT VARIABLE_VALUE FROM \
     information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'SLAVE_RUNNING')";

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
        request: crate::probe::request(USER, sql),
        complete: crate::probe::complete,
    }
}
