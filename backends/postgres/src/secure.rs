//! The pair on a secure cluster (`lockbench up --secure`): TLS only, SCRAM passwords,
//! client certificates, least privilege.
//!
//! - `ssl = on` with the project's server certificate and key, copied by the start script into
//!   the server's `tls/` (mode 0600: PostgreSQL refuses a key others may read, and in a
//!   container the directory is chowned to `postgres`), and its CA for client certificates.
//! - `pg_hba.conf` has only `hostssl` lines, each `scram-sha-256` plus a client certificate:
//!   `lockbench` with `clientcert=verify-full` (the certificate's common name must be the user,
//!   as etcd takes a certificate's CN for its user), the replication role and the administrator
//!   `postgres` (the cluster's probes and faults, which read `pg_stat_wal_receiver` and call
//!   `pg_promote`) with `clientcert=verify-ca`: they present the server's certificate and the
//!   client's, whose names are not theirs.
//! - The roles are made by the primary's `initdb` in single-user mode (`roles.sql`), from SCRAM
//!   verifiers computed here: the passwords themselves are in no server file but `pgpass`
//!   (mode 0600), the administrator's and the replication role's, which the start script's
//!   `psql` and `pg_basebackup` must send. lockbench's user's is only a verifier.
//! - Least privilege (docs/secure-clusters.md): `lockbench` may `CONNECT` to the database
//!   `lockbench` (no one else but the superuser may) and owns the schema `lockbench`, first on
//!   its `search_path`, where the fencing sequence lives; advisory locks, `pg_locks`,
//!   `pg_stat_activity` and `pg_stat_statements` are every role's. It may not create anything in
//!   `public`, nor read other roles' statements.

use hmac::{KeyInit, Mac};
use lockbench_core::launch::Secure;
use secrecy::ExposeSecret;
use std::path::Path;

/// The replication role's password: HMAC-SHA256 of the administrator's, so it is its own
/// secret yet needs no file of its own in the profile.
pub fn replication_password(secure: &Secure) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(
        secure.admin_password.expose_secret().as_bytes(),
    )
    .expect("HMAC takes a key of any length");
    mac.update(crate::server::REPLICATION_USER.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A SCRAM-SHA-256 verifier of `password` (what `pg_authid` stores): the password cannot be
/// read back from it.
fn verifier(password: &str) -> String {
    postgres_protocol::password::scram_sha_256(password.as_bytes())
}

/// The roles, one statement a line (single-user mode runs each line).
pub(crate) fn roles_sql(secure: &Secure) -> String {
    let u = &secure.user;
    let repl = crate::server::REPLICATION_USER;
    let db = crate::server::DATABASE;
    format!(
        "ALTER ROLE postgres PASSWORD '{admin}'\n\
         CREATE ROLE {u} LOGIN PASSWORD '{pw}'\n\
         CREATE ROLE {repl} LOGIN REPLICATION PASSWORD '{rpw}'\n\
         REVOKE ALL ON DATABASE {db} FROM PUBLIC\n\
         GRANT CONNECT ON DATABASE {db} TO {u}\n\
         CREATE SCHEMA {u} AUTHORIZATION {u}\n",
        admin = verifier(secure.admin_password.expose_secret()),
        pw = verifier(secure.password.expose_secret()),
        rpw = verifier(&replication_password(secure)),
    )
}

/// `pgpass`: the administrator's and the replication role's passwords, for the start script's
/// `psql` (is the peer the primary?) and `pg_basebackup`.
pub(crate) fn pgpass(secure: &Secure) -> String {
    format!(
        "*:*:*:postgres:{}\n*:*:*:{}:{}\n",
        secure.admin_password.expose_secret(),
        crate::server::REPLICATION_USER,
        replication_password(secure)
    )
}

/// `postgresql.conf`'s TLS lines, for a server whose directory is `root`.
pub(crate) fn ssl_conf(root: &Path) -> String {
    let tls = root.join("tls");
    format!(
        "# A secure cluster (lockbench up --secure): TLS only, SCRAM passwords (secure.rs).\n\
         ssl = on\n\
         ssl_cert_file = '{}'\n\
         ssl_key_file = '{}'\n\
         ssl_ca_file = '{}'\n\
         password_encryption = 'scram-sha-256'\n",
        tls.join("server.pem").display(),
        tls.join("server.key").display(),
        tls.join("ca.pem").display(),
    )
}

/// `pg_hba.conf` of a secure server on network `net`: `hostssl` only (see the module docs).
pub(crate) fn pg_hba(net: &str, u: &str) -> String {
    let repl = crate::server::REPLICATION_USER;
    let db = crate::server::DATABASE;
    let mut out = String::from(
        "# Written by lockbench on every start: a secure cluster (backends/postgres/src/secure.rs).\n\
         # TLS only, a SCRAM password and a client certificate signed by the cluster's CA.\n\
         # TYPE  DATABASE     USER                   ADDRESS          METHOD\n",
    );
    for addr in [net, "127.0.0.1/32"] {
        out.push_str(&format!(
            "hostssl {db:<12} {u:<22} {addr:<16} scram-sha-256 clientcert=verify-full\n\
             hostssl replication  {repl:<22} {addr:<16} scram-sha-256 clientcert=verify-ca\n\
             hostssl {db:<12} postgres               {addr:<16} scram-sha-256 clientcert=verify-ca\n"
        ));
    }
    out
}
