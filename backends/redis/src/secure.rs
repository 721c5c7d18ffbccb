//! How a Redis server takes TLS and lockbench's ACL user (issue 22): the ACL rules of least
//! privilege lockbench's clients need, and the `redis.conf` lines of a server that speaks only
//! TLS (mutual: clients present a certificate) and admits only that user.
//!
//! Why in this crate: what the recipes send is this crate's knowledge, so the rules that admit
//! exactly that are too; the tests' servers use them (`tests/integration/secure.rs`, and the
//! `lockbench` binary's run-directory test), and `docs/secure-clusters.md` states them for a
//! user creating the same user on a production cluster. The managed secure cluster
//! (`lockbench up --secure`) launches its Redis servers with [`managed_config`].

use std::fmt::Write;
use std::path::Path;

/// The ACL rules of lockbench's user: the lock keys and channels under the default
/// `lockbench:` prefix, the commands the recipes send (`EVALSHA`, `SCRIPT LOAD`, Redlock's
/// `SET`), those their scripts call (`GET`, `SET`, `DEL`, `INCR`, `EXISTS`, `PEXPIRE`,
/// `PUBLISH`; Redis checks a script's calls against the caller's rules), `redis-pubsub`'s
/// `SUBSCRIBE` / `UNSUBSCRIBE`, the request counters' `INFO` and `PUBSUB NUMSUB`, and `PING`
/// (the pre-run check that each server answers).
pub const ACL_RULES: &str = "resetkeys resetchannels ~lockbench:* &lockbench:* -@all \
     +evalsha +script|load +set +get +del +incr +exists +pexpire +publish +subscribe \
     +unsubscribe +pubsub|numsub +info +ping";

/// What the server-side observer (`observe_server = true`) needs beyond [`ACL_RULES`]: `PTTL`,
/// `PSUBSCRIBE` to the lock keys' keyspace channels (Redis matches a `PSUBSCRIBE` pattern
/// *literally* against the user's channel rules, and the observer's pattern carries the run's
/// key prefix, so only `allchannels` admits it), and `CONFIG GET|SET` (of
/// `notify-keyspace-events`; ACLs cannot narrow a `CONFIG SET` to one parameter).
pub const OBSERVER_ACL_RULES: &str =
    "allchannels +pttl +psubscribe +punsubscribe +config|get +config|set";

/// The TLS files a server presents and trusts.
#[derive(Clone, Copy, Debug)]
pub struct ServerTls<'a> {
    /// The CA clients' certificates must be signed by.
    pub ca: &'a Path,
    /// The server's certificate.
    pub cert: &'a Path,
    /// Its private key.
    pub key: &'a Path,
}

/// The `redis.conf` lines of a server on `bind` that serves TLS on `tls_port` (clients must
/// present a certificate signed by `tls.ca`) and plaintext on `plain_port` only when it is not
/// 0 (`port 0`: none), whose `default` user is off and whose one user is `user` with
/// `password` and `rules`. The text holds the password: write it to a file only its owner
/// reads.
pub fn config(
    bind: &str,
    tls_port: u16,
    plain_port: u16,
    tls: ServerTls<'_>,
    user: &str,
    password: &secrecy::SecretString,
    rules: &str,
) -> String {
    use secrecy::ExposeSecret;
    let mut text = String::new();
    let _ = write!(
        text,
        "bind {bind}\nport {plain_port}\ntls-port {tls_port}\ntls-cert-file {}\n\
         tls-key-file {}\ntls-ca-cert-file {}\ntls-auth-clients yes\nuser default off\n\
         user {user} on >{} {rules}\n",
        tls.cert.display(),
        tls.key.display(),
        tls.ca.display(),
        password.expose_secret(),
    );
    text
}

/// The `redis.conf` of a managed secure server (`lockbench up --secure`, the
/// [`Secure`](lockbench_core::launch::Secure) of its site): mutual TLS with the site's files,
/// the `default` user off, and `secure.user` with [`ACL_RULES`] and [`OBSERVER_ACL_RULES`]
/// (the scenarios observe the servers). The password appears only as its SHA-256
/// (`#<hex>`, which Redis compares the `AUTH` password's hash with), so the file holds no
/// secret. The ports are the command line's (`--port 0 --tls-port P`).
pub fn managed_config(secure: &lockbench_core::launch::Secure) -> String {
    use secrecy::ExposeSecret;
    use sha2::Digest;
    let hash = sha2::Sha256::digest(secure.password.expose_secret().as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "tls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\ntls-auth-clients yes\n\
         user default off\nuser {} on #{hex} {ACL_RULES} {OBSERVER_ACL_RULES}\n",
        secure.cert.display(),
        secure.key.display(),
        secure.ca.display(),
        secure.user,
    )
}

/// `AUTH user password`, what a health probe of a secure server sends first.
pub fn auth_request(user: &str, password: &str) -> Vec<u8> {
    let mut request = b"*3\r\n$4\r\nAUTH\r\n".to_vec();
    for part in [user, password] {
        request.extend_from_slice(format!("${}\r\n{part}\r\n", part.len()).as_bytes());
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The managed secure server's config holds the password's hash, never the password.
    #[test]
    fn the_managed_config_holds_no_password() {
        let secure = lockbench_core::launch::Secure::in_dir(
            "/s".as_ref(),
            "lockbench",
            "hunter2".to_string().into(),
            "root-pw".to_string().into(),
        );
        let text = managed_config(&secure);
        assert!(!text.contains("hunter2"), "{text}");
        // sha256("hunter2")
        assert!(
            text.contains(
                "user lockbench on #f52fbd32b2b3b86ff88ef6c490628285f482af15ddcb29541f94bcf526a3f6c7"
            ),
            "{text}"
        );
        assert!(text.contains("user default off") && text.contains("tls-auth-clients yes"));
        assert_eq!(
            auth_request("u", "pw"),
            b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$2\r\npw\r\n"
        );
    }
}
