//! The cluster on a secure site (`lockbench up --secure`): TLS everywhere, client
//! certificates, passwords, least privilege. What [`crate::server`]'s config adds:
//!
//! - `tls {}` on the client port with `verify: true`: a client without a certificate of the
//!   profile's CA is refused in the handshake. nats-server 2.9 sends its `INFO` line in clear
//!   first (`tls_required`), then the client starts TLS.
//! - The routes between the servers over TLS with the servers' certificate (which carries both
//!   server and client use), each side verifying the other.
//! - Monitoring over HTTPS (`https:` instead of `http:`, same port): its TLS is the client
//!   port's certificate; nats-server asks monitoring clients for no certificate, so anyone who
//!   trusts the CA may read `/healthz`, `/varz` and `/connz` (no secret is in them), and nobody
//!   reads them in clear.
//! - Two users in the global account, whose passwords the file holds only as bcrypt hashes:
//!   `lockbench`, allowed only what the `nats-kv` recipe sends on the default bucket (its
//!   `$KV.<bucket>.>` subjects, the JetStream API requests on the bucket's stream, the recipe's
//!   wake-up subjects) and replies on `_INBOX.>` ([`user_permissions`]); and [`ADMIN_USER`],
//!   without limits, the probes' login (the leader check asks for the stream's info on a reply
//!   subject of its own).
//!
//! Why only the default bucket: NATS grants subjects by whole tokens, and a bucket is one
//! token, so "every lockbench bucket" is no subject; a run that names another bucket on a
//! secure cluster is refused by the server, and the client says so (`login.rs`).
//!
//! Why bcrypt at a low cost: the server checks the hash at every connect (a herd run opens
//! 1,000), and the passwords are 32 random bytes, which no cost makes weaker or stronger to
//! guess; the hash keeps the password out of the server's files. Its salt is drawn from the
//! password (HMAC-SHA256), so the same profile always writes the same file.

use hmac::{KeyInit, Mac};
use lockbench_core::launch::Secure;
use secrecy::ExposeSecret;

/// The administrator the probes log in as.
pub const ADMIN_USER: &str = "admin";

/// bcrypt's cost for the stored hashes (see the module docs).
const COST: u32 = 6;

/// The bcrypt hash nats-server stores for `password` (`$2a$06$...`).
pub fn bcrypt_hash(password: &str) -> String {
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(password.as_bytes()).expect("any key length");
    mac.update(b"lockbench nats bcrypt salt");
    let digest = mac.finalize().into_bytes();
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&digest[..16]);
    bcrypt::hash_with_salt(password, COST, salt)
        .expect("a cost within bcrypt's range")
        .format_for_version(bcrypt::Version::TwoA)
}

/// The subjects `lockbench` may publish to and subscribe on, for the recipe on `bucket`.
pub fn user_permissions(bucket: &str) -> (Vec<String>, Vec<String>) {
    let stream = format!("KV_{bucket}");
    let wake = crate::bucket::wake_subject(bucket, ">");
    let mut publish: Vec<String> = ["INFO", "CREATE", "UPDATE", "MSG.GET", "MSG.DELETE"]
        .iter()
        .map(|api| format!("$JS.API.STREAM.{api}.{stream}"))
        .collect();
    publish.extend([
        format!("$JS.API.DIRECT.GET.{stream}"),
        format!("$JS.API.DIRECT.GET.{stream}.>"),
        format!("$KV.{bucket}.>"),
        wake.clone(),
    ]);
    (publish, vec!["_INBOX.>".into(), wake])
}

/// The TLS block (the client port's and HTTPS monitoring's, or the routes' with `indent`).
fn tls_block(secure: &Secure, indent: &str) -> String {
    format!(
        "{indent}tls {{\n\
         {indent}  cert_file: \"{cert}\"\n\
         {indent}  key_file: \"{key}\"\n\
         {indent}  ca_file: \"{ca}\"\n\
         {indent}  verify: true\n\
         {indent}  # A loaded machine's handshake can take longer than the default 0.5 s.\n\
         {indent}  timeout: 2\n\
         {indent}}}\n",
        cert = secure.cert.display(),
        key = secure.key.display(),
        ca = secure.ca.display(),
    )
}

/// The client port's TLS and the users (the top level of `nats.conf`).
pub(crate) fn client_side(secure: &Secure) -> String {
    let quoted = |list: &[String]| {
        list.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (publish, subscribe) = user_permissions(crate::knobs::DEFAULT_BUCKET);
    format!(
        "# A secure cluster (lockbench up --secure): TLS with client certificates, users with\n\
         # bcrypt'd passwords, least privilege (backends/nats/src/secure.rs).\n\
         {tls}\
         authorization {{\n  users: [\n\
         \x20   {{\n      user: \"{user}\"\n      password: \"{pw}\"\n      permissions: {{\n\
         \x20       publish: {{ allow: [{publish}] }}\n\
         \x20       subscribe: {{ allow: [{subscribe}] }}\n      }}\n    }}\n\
         \x20   {{ user: \"{ADMIN_USER}\", password: \"{admin}\" }}\n  ]\n}}\n",
        tls = tls_block(secure, ""),
        user = secure.user,
        pw = bcrypt_hash(secure.password.expose_secret()),
        admin = bcrypt_hash(secure.admin_password.expose_secret()),
        publish = quoted(&publish),
        subscribe = quoted(&subscribe),
    )
}

/// The routes' TLS (inside `cluster {}`).
pub(crate) fn route_side(secure: &Secure) -> String {
    tls_block(secure, "  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_bcrypt_and_verifies_and_is_the_same_each_time() {
        let h = bcrypt_hash("s3cret");
        assert!(h.starts_with("$2a$06$"), "{h}");
        assert_eq!(h.len(), 60);
        assert!(bcrypt::verify("s3cret", &h).unwrap());
        assert!(!bcrypt::verify("s3cret!", &h).unwrap());
        assert_eq!(h, bcrypt_hash("s3cret"));
        assert_ne!(h, bcrypt_hash("other"));
    }

    #[test]
    fn the_user_may_use_only_the_bucket_and_its_replies() {
        let (publish, subscribe) = user_permissions("lockbench");
        assert!(publish.contains(&"$KV.lockbench.>".to_string()));
        assert!(publish.contains(&"$JS.API.STREAM.MSG.DELETE.KV_lockbench".to_string()));
        assert!(
            publish.iter().all(|s| s.contains("lockbench")),
            "{publish:?}"
        );
        assert!(!publish.iter().any(|s| s == ">" || s == "$JS.API.>"));
        assert_eq!(subscribe, ["_INBOX.>", "lockbench.wake.lockbench.>"]);
    }

    #[test]
    fn the_config_holds_hashes_not_passwords() {
        let secure = Secure::in_dir(
            std::path::Path::new("/s"),
            "lockbench",
            "user-pw".to_string().into(),
            "admin-pw".to_string().into(),
        );
        let conf = client_side(&secure);
        assert!(
            !conf.contains("user-pw") && !conf.contains("admin-pw"),
            "{conf}"
        );
        assert!(conf.contains(&bcrypt_hash("user-pw")), "{conf}");
        assert!(conf.contains("verify: true"), "{conf}");
        assert!(conf.contains("ca_file: \"/s/ca.pem\""), "{conf}");
    }
}
