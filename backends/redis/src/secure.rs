//! How a Redis server takes TLS and lockbench's ACL user (issue 22): the ACL rules of least
//! privilege lockbench's clients need, and the `redis.conf` lines of a server that speaks only
//! TLS (mutual: clients present a certificate) and admits only that user.
//!
//! Why in this crate: what the recipes send is this crate's knowledge, so the rules that admit
//! exactly that are too; the tests' servers use them (`tests/integration/secure.rs`, and the
//! `lockbench` binary's run-directory test), and `docs/secure-clusters.md` states them for a
//! user creating the same user on a production cluster. A managed secure profile
//! (`lockbench up --secure`, not built yet) would launch its servers with [`config`].

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
