//! What a failed connect means when TLS or `AUTH` is involved, in words that name the setting
//! to fix.
//!
//! redis-rs reports a refused handshake or password as a generic I/O or response error
//! ("invalid peer certificate: UnknownIssuer", "WRONGPASS ..."); a user reading that next to a
//! cluster file has to guess which line is wrong. [`explain`] keeps the client's own text and
//! adds what it means and which setting of which group to change. Each case has an
//! integration test against a real server (`tests/integration/secure.rs`).
//!
//! The cases and what the client sees (rustls 0.23, Redis 7.0):
//! - **wrong CA**: rustls refuses the server's chain, `invalid peer certificate: UnknownIssuer`;
//! - **wrong password**: the server answers `AUTH` with `WRONGPASS`;
//! - **TLS against a plaintext port**: Redis reads the ClientHello as the start of an inline
//!   command and waits for its end, so the handshake is never answered and the connect times
//!   out (the connect timeout, 1.5 s); a server that answers in plaintext instead makes rustls
//!   fail on a record it cannot read (`InvalidContentType`);
//! - **plaintext against a TLS port**: the server fails its handshake on the first command's
//!   bytes and closes the connection, so the first reply never comes (the connection is reset
//!   or ends);
//! - **a client certificate the server refuses** (`tls-auth-clients yes`): OpenSSL in Redis
//!   sends a TLS alert, which rustls reports on the first read (`AUTH`'s reply) as `received
//!   fatal alert: UnknownCA` (another CA's certificate), `CertificateExpired`, or
//!   `CertificateRequired` (none presented).

use crate::connect::Security;
use redis::RedisError;

/// `e` (from opening a connection or a first request) with what it means for `security`'s
/// settings, when it is one of the cases above; else `e` as the client said it.
pub(crate) fn explain(e: &RedisError, security: &Security) -> String {
    let said = e.to_string();
    let text = said.to_ascii_lowercase();
    let group = &security.group;
    // BadSignature: an issuer of the same name that did not sign it (another CA by that name).
    let meaning = if text.contains("unknownissuer")
        || text.contains("unknown issuer")
        || text.contains("badsignature")
    {
        Some(format!(
            "certificate signed by unknown authority: the server's chain does not end at {}; \
             set `{group}.tls.ca` to the CA file that signed the server's certificate",
            match &security.ca {
                Some(ca) => format!("{group}.tls.ca = {}", ca.display()),
                None => "the system's trusted roots (no `tls.ca` set)".to_string(),
            }
        ))
    } else if text.contains("alert") && text.contains("certificaterequired") {
        Some(format!(
            "the server requires a client certificate (`tls-auth-clients yes`): set \
             `{group}.tls.cert` and `{group}.tls.key` to a certificate signed by the CA the \
             server trusts (`tls-ca-cert-file`)"
        ))
    } else if (text.contains("alert") && text.contains("certificate")) || text.contains("unknownca")
    {
        let why = if text.contains("expired") {
            "it has expired (or the clocks disagree)"
        } else if text.contains("unknownca") {
            "it is not signed by the CA the server trusts (`tls-ca-cert-file`)"
        } else {
            "it is expired, not yet valid or not signed by the CA the server trusts \
             (`tls-ca-cert-file`)"
        };
        Some(format!(
            "the server refused the client certificate {}: {why}; set `{group}.tls.cert` and \
             `{group}.tls.key` to a valid certificate of the CA the server trusts",
            match &security.cert {
                Some(cert) => format!("`{group}.tls.cert` = {}", cert.display()),
                None => format!("(none set: `{group}.tls.cert`)"),
            }
        ))
    } else if text.contains("notvalidforname") || text.contains("not valid for name") {
        Some(format!(
            "the server's certificate does not name the host in the address: write the address \
             with a name (or IP address) the certificate carries in `{group}.endpoints`"
        ))
    } else if matches!(e.kind(), redis::ErrorKind::AuthenticationFailed)
        || text.contains("wrongpass")
        || text.contains("noauth")
    {
        Some(match &security.user {
            Some(user) => format!(
                "authentication failed as user `{user}`: the server rejects this user's \
                 password (or the user is disabled); check `{group}.user` and the password in \
                 `{group}.password_env` / `{group}.password_file` (the ACL user must exist on \
                 every server of `{group}`)"
            ),
            None => format!(
                "the server requires authentication: set `{group}.user` and `{group}.password_env` \
                 (or `{group}.password_file`) in the cluster file"
            ),
        })
    } else if security.tls && e.is_timeout() {
        Some(tls_unanswered(group))
    } else if security.tls
        && (text.contains("invalidcontenttype")
            || text.contains("corrupt message")
            || text.contains("invalidmessage"))
    {
        Some(format!(
            "the server does not speak TLS on this port (it answered the TLS handshake in \
             plaintext): remove `{group}.tls`, or point `{group}.endpoints` at the server's TLS \
             port (Redis `tls-port`)"
        ))
    } else if !security.tls
        && (e.is_connection_dropped()
            || e.is_io_error()
            || text.contains("reset by peer")
            || text.contains("connection closed")
            || text.contains("broken pipe"))
    {
        Some(format!(
            "the server closed the connection on the first request: if this port serves TLS \
             (Redis `tls-port`), set `{group}.tls` (with `ca` = the CA that signed the server's \
             certificate)"
        ))
    } else {
        None
    };
    match meaning {
        Some(m) => format!("{m} (client said: {said})"),
        None => said,
    }
}

/// A TLS handshake that got no answer: a plaintext Redis port reads the ClientHello as the
/// start of a command line and waits for the rest, so it never answers; a server that is down
/// or cut off does not either.
pub(crate) fn tls_unanswered(group: &str) -> String {
    format!(
        "the server did not answer the TLS handshake: if this is a plaintext port (Redis \
         `port`, which does not speak TLS and waits for a command line), remove `{group}.tls` or \
         point `{group}.endpoints` at the server's TLS port (`tls-port`); otherwise the server \
         is unreachable or stopped"
    )
}
