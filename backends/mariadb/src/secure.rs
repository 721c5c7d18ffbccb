//! The pair on a secure cluster (`lockbench up --secure`): TLS only, client certificates,
//! passwords, least privilege.
//!
//! - `require-secure-transport`: a connection without TLS is refused at login. The server's
//!   certificate and key are copied by the start script into the server's `tls/` (mode 0600),
//!   with the CA its clients' certificates must be signed by.
//! - Every account needs a certificate of that CA (`REQUIRE X509`) and a password, stored as
//!   `mysql_native_password`'s hash (SHA-1 of SHA-1): the passwords themselves are in no server
//!   file but the start script (mode 0600), which must send the replication account's and ask
//!   the peer as the administrator.
//! - Least privilege: `lockbench` may read and draw from the fencing sequence in the database
//!   `lockbench` (`SELECT, INSERT` there) and read `performance_schema` (the observer's
//!   connection attributes, the counters' digests). `GET_LOCK` and its kin need no privilege.
//!   `root` (from anywhere, with a certificate) is the administrator the probes and the
//!   promotion use; `lockbench_replication` may only replicate. The accounts a fresh data
//!   directory has for 127.0.0.1 and ::1 are dropped.

use hmac::{KeyInit, Mac};
use lockbench_core::launch::Secure;
use secrecy::ExposeSecret;
use sha1::{Digest, Sha1};
use std::path::Path;

/// The replication account.
pub const REPLICATION_USER: &str = "lockbench_replication";
/// The administrator the probes log in as.
pub const ADMIN_USER: &str = "root";

/// The replication account's password: HMAC-SHA256 of the administrator's, so it is its own
/// secret yet needs no file of its own in the profile.
pub fn replication_password(secure: &Secure) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(
        secure.admin_password.expose_secret().as_bytes(),
    )
    .expect("HMAC takes a key of any length");
    mac.update(REPLICATION_USER.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `mysql_native_password`'s stored hash of `password` (`*` and SHA-1 of SHA-1, upper-case
/// hex): the password cannot be read back from it.
pub fn native_hash(password: &str) -> String {
    let twice = Sha1::digest(Sha1::digest(password.as_bytes()));
    let hex: String = twice.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

/// `mysql_native_password`'s login answer to the server's 20-byte `scramble`:
/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
pub(crate) fn native_answer(password: &str, scramble: &[u8]) -> Vec<u8> {
    let once = Sha1::digest(password.as_bytes());
    let twice = Sha1::digest(once);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(twice);
    let mask = h.finalize();
    once.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
}

/// The accounts and grants of a secure pair, after the database (see the module docs).
pub(crate) fn accounts_sql(secure: &Secure) -> String {
    let u = &secure.user;
    let db = crate::server::DATABASE;
    format!(
        "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';\n\
         CREATE OR REPLACE USER '{u}'@'%' IDENTIFIED BY PASSWORD '{pw}' REQUIRE X509;\n\
         GRANT SELECT, INSERT ON {db}.* TO '{u}'@'%';\n\
         GRANT SELECT ON performance_schema.* TO '{u}'@'%';\n\
         CREATE OR REPLACE USER '{ADMIN_USER}'@'%' IDENTIFIED BY PASSWORD '{admin}' REQUIRE X509;\n\
         GRANT ALL PRIVILEGES ON *.* TO '{ADMIN_USER}'@'%' WITH GRANT OPTION;\n\
         CREATE OR REPLACE USER '{REPLICATION_USER}'@'%' IDENTIFIED BY PASSWORD '{repl}' \
         REQUIRE X509;\n\
         GRANT REPLICATION SLAVE ON *.* TO '{REPLICATION_USER}'@'%';\n",
        pw = native_hash(secure.password.expose_secret()),
        admin = native_hash(secure.admin_password.expose_secret()),
        repl = native_hash(&replication_password(secure)),
    )
}

/// The option file's TLS lines, for a server whose directory is `root`.
pub(crate) fn tls_options(root: &Path) -> String {
    let tls = root.join("tls");
    format!(
        "# A secure cluster (lockbench up --secure): TLS only (secure.rs).\n\
         require-secure-transport = ON\n\
         ssl-ca = {}\n\
         ssl-cert = {}\n\
         ssl-key = {}\n",
        tls.join("ca.pem").display(),
        tls.join("server.pem").display(),
        tls.join("server.key").display(),
    )
}

/// How the replica logs in to its primary: over TLS with the server's certificate, as the
/// replication account, the primary's certificate verified.
pub(crate) fn master_auth(secure: &Secure, root: &Path) -> String {
    let tls = root.join("tls");
    format!(
        "MASTER_USER='{REPLICATION_USER}', MASTER_PASSWORD='{pw}', MASTER_SSL=1, \
         MASTER_SSL_CA='{ca}', MASTER_SSL_CERT='{cert}', MASTER_SSL_KEY='{key}', \
         MASTER_SSL_VERIFY_SERVER_CERT=1",
        pw = replication_password(secure),
        ca = tls.join("ca.pem").display(),
        cert = tls.join("server.pem").display(),
        key = tls.join("server.key").display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_native_hash_is_the_servers() {
        // SELECT PASSWORD('lockbench'), PASSWORD('s3cret') on MariaDB 10.11.
        assert_eq!(
            native_hash("lockbench"),
            "*B86129523BF25208A2CBF1FF8589EFEAF9BF2323"
        );
        assert_eq!(
            native_hash("s3cret"),
            "*B865CAE8F340F6CE1485A06F4492BB49718DF1EC"
        );
    }
}
