//! How a Redis server takes TLS and lockbench's ACL user: the ACL rules of least
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

/// The failover pair's replication user: what a replica logs in to its primary as
/// (`masteruser`), with the rules a replication link needs.
pub const REPLICA_USER: &str = "lockbench-replica";
/// [`REPLICA_USER`]'s rules: `PSYNC`, `REPLCONF`, `PING` (the Redis ACL documentation's set).
pub const REPLICA_ACL_RULES: &str = "-@all +psync +replconf +ping";

/// The user the Sentinels log in as: to the failover pair (`sentinel auth-user`) and to each
/// other (`sentinel sentinel-user`).
pub const SENTINEL_USER: &str = "lockbench-sentinel";
/// [`SENTINEL_USER`]'s rules on the pair's servers: what Sentinel sends to watch and fail over
/// a primary (the Redis Sentinel documentation's set: `INFO`, `ROLE`, the hello channel,
/// `SLAVEOF` and `CONFIG REWRITE` in a `MULTI`, killing clients after a switch).
pub const SENTINEL_ACL_RULES: &str = "allchannels -@all +multi +slaveof +ping +exec \
     +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill";
/// [`SENTINEL_USER`]'s rules on the Sentinels (one Sentinel logging in to another): `PING`,
/// the hello message, the votes (`SENTINEL is-master-down-by-addr`). Checked on Redis 7.0.15:
/// a primary killed under these rules is failed over with a quorum of votes.
pub const SENTINEL_PEER_ACL_RULES: &str =
    "-@all +ping +publish +sentinel|is-master-down-by-addr +client|setname";
/// lockbench's user on the Sentinels: it only asks which server is the primary (and `PING`s).
pub const SENTINEL_CLIENT_ACL_RULES: &str = "-@all +sentinel|get-master-addr-by-name +ping";

/// The managed secure cluster's administrator on its Redis servers (with the profile's
/// administrator password): the chaos controller's own login, for what lockbench's user may
/// not send (the `redis-failover` fault's `SCAN` script and `REPLICAOF`, the clock-skew
/// fault's TTL script). A test cluster's harness user, not one to create on a user's cluster.
pub const ADMIN_USER: &str = "lockbench-admin";

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
/// the `default` user off, `secure.user` with [`ACL_RULES`] and [`OBSERVER_ACL_RULES`] (the
/// scenarios observe the servers), and [`ADMIN_USER`]. Passwords appear only as their SHA-256
/// (`#<hex>`, which Redis compares the `AUTH` password's hash with), so the file holds no
/// secret. The ports are the command line's (`--port 0 --tls-port P`).
pub fn managed_config(secure: &lockbench_core::launch::Secure) -> String {
    format!(
        "{}tls-auth-clients yes\nuser default off\nuser {} on #{} {ACL_RULES} \
         {OBSERVER_ACL_RULES}\nuser {ADMIN_USER} on #{} ~* &* +@all\n",
        tls_files(secure),
        secure.user,
        hash(&secure.password),
        hash(&secure.admin_password),
    )
}

/// What a server of the failover pair adds to [`managed_config`]: replication over TLS
/// (`tls-replication yes`) as [`REPLICA_USER`], and the users the replica and the Sentinels log
/// in as. Either server may be the replica after a failover, so both carry all of it. The
/// replica's login (`masterauth`) and the Sentinels' ([`sentinel_config`]) are the only places
/// the administrator password is written in clear: Redis must send it. Those files are their
/// owner's alone (the managed cluster writes servers' files with mode 0600 and starts them
/// with umask 077, so Redis's own `CONFIG REWRITE` keeps them so); lockbench's user's password
/// stays a hash everywhere.
pub fn failover_config(secure: &lockbench_core::launch::Secure) -> String {
    use secrecy::ExposeSecret;
    let admin = hash(&secure.admin_password);
    format!(
        "tls-replication yes\nuser {REPLICA_USER} on #{admin} {REPLICA_ACL_RULES}\n\
         user {SENTINEL_USER} on #{admin} {SENTINEL_ACL_RULES}\n\
         masteruser {REPLICA_USER}\nmasterauth {}\n",
        secure.admin_password.expose_secret(),
    )
}

/// What a secure Sentinel's `sentinel.conf` (whose `port` is 0) adds for monitoring `master`
/// (after its `sentinel monitor` line): the client port as `tls-port`, client certificates,
/// TLS to the pair and to the other Sentinels (`tls-replication yes`), the login to both as
/// [`SENTINEL_USER`] (the administrator password, in clear as Sentinel must send it: see
/// [`failover_config`]), and who may log in to it: lockbench's user with
/// [`SENTINEL_CLIENT_ACL_RULES`], the other Sentinels with [`SENTINEL_PEER_ACL_RULES`].
pub fn sentinel_config(
    secure: &lockbench_core::launch::Secure,
    master: &str,
    tls_port: u16,
) -> String {
    use secrecy::ExposeSecret;
    let admin = secure.admin_password.expose_secret();
    format!(
        "tls-port {tls_port}\n{}tls-auth-clients yes\ntls-replication yes\n\
         user default off\nuser {} on #{} {SENTINEL_CLIENT_ACL_RULES}\n\
         user {SENTINEL_USER} on #{} {SENTINEL_PEER_ACL_RULES}\n\
         sentinel auth-user {master} {SENTINEL_USER}\nsentinel auth-pass {master} {admin}\n\
         sentinel sentinel-user {SENTINEL_USER}\nsentinel sentinel-pass {admin}\n",
        tls_files(secure),
        secure.user,
        hash(&secure.password),
        hash(&secure.admin_password),
    )
}

/// The server's TLS files, as `redis.conf` lines.
fn tls_files(secure: &lockbench_core::launch::Secure) -> String {
    format!(
        "tls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n",
        secure.cert.display(),
        secure.key.display(),
        secure.ca.display(),
    )
}

/// `password`'s SHA-256 in hex, as a Redis ACL rule takes it after `#`.
fn hash(password: &secrecy::SecretString) -> String {
    use secrecy::ExposeSecret;
    use sha2::Digest;
    let hash = sha2::Sha256::digest(password.expose_secret().as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
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
        assert!(!text.contains("root-pw"), "{text}");
        // The pair and the Sentinels log in with the administrator's password in clear (Redis
        // must send it), never with lockbench's user's.
        let pair = failover_config(&secure);
        assert!(
            pair.contains("masterauth root-pw\n") && !pair.contains("hunter2"),
            "{pair}"
        );
        let sentinel = sentinel_config(&secure, "m", 26390);
        assert!(sentinel.starts_with("tls-port 26390\n"), "{sentinel}");
        assert!(
            sentinel.contains("sentinel auth-pass m root-pw\n"),
            "{sentinel}"
        );
        assert!(!sentinel.contains("hunter2"), "{sentinel}");
        assert_eq!(
            auth_request("u", "pw"),
            b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$2\r\npw\r\n"
        );
    }
}
