//! Why a connect to etcd failed, in words that name the member, the setting and the fix.
//!
//! `etcd-client` connects through tonic's balanced channel, which hides a member it cannot
//! connect to and waits for one it can: a wrong CA, a refused client certificate, TLS against a
//! plaintext port and plaintext against a TLS port all look like a silent cluster until the
//! first request's deadline, and then say nothing about why. So when a connect has not
//! succeeded within [`PROBE_AFTER`], lockbench speaks to each member itself ([`misconfigured`]):
//! one HTTP/1.0 `GET /health` with the group's TLS settings (or none), whose handshake and
//! answer tell the cases apart. A member that is down or silent is not a setting to fix: the
//! probe then says nothing and the connect keeps its own deadline. A connect that succeeds in
//! time sends no probe.
//!
//! What each case looks like from here (etcd 3.4, rustls 0.23):
//! - **wrong CA**: rustls refuses the member's chain (`UnknownIssuer`);
//! - **a certificate that does not name the address**: `NotValidForName`;
//! - **a client certificate the member refuses** (expired, signed by another CA): the member
//!   sends a fatal alert (`BadCertificate`, `CertificateExpired`, `UnknownCA`); under TLS 1.3
//!   it arrives on the first read after the handshake;
//! - **no client certificate where one is required**: alert `CertificateRequired`;
//! - **TLS against a plaintext port**: the member answers the ClientHello in plaintext (an
//!   HTTP 400) or closes: rustls reads no TLS record;
//! - **plaintext against a TLS port**: the member fails its handshake on the request's bytes
//!   and closes the connection, or answers in TLS.
//!
//! Authentication and permission errors are gRPC statuses the members send, and
//! [`explain_status`] words them.

use crate::access::{Access, host_port};
use crate::http::{self, Failed};
use lockbench_core::tls_failure::{self, Refusal, Stage};
use std::time::Duration;

/// How long a connect may go without success before the members are probed.
pub(crate) const PROBE_AFTER: Duration = Duration::from_millis(500);
/// Each stage of one probe (TCP connect, handshake, answer).
const PROBE_BUDGET: Duration = Duration::from_millis(1000);

/// The first member (`host:port`) whose answer shows a setting to fix, and what to fix;
/// `None` when every member answers as the settings expect, or is down or silent.
pub(crate) async fn misconfigured(access: &Access) -> Option<(String, String)> {
    let mut probes = tokio::task::JoinSet::new();
    for url in access.urls.clone() {
        let access = access.clone();
        probes.spawn(async move {
            let found = probe(&access, &url).await;
            found.map(|why| (host_port(&url).to_string(), why))
        });
    }
    while let Some(done) = probes.join_next().await {
        if let Ok(Some(found)) = done {
            return Some(found);
        }
    }
    None
}

/// What is wrong with the settings for member `url`, from one `GET /health`.
pub(crate) async fn probe(access: &Access, url: &str) -> Option<String> {
    match http::get(access, url, "/health", PROBE_BUDGET).await {
        Ok(answer) => plaintext_answer(access, &answer),
        Err(Failed::Setup(why)) => Some(why),
        Err(Failed::At(Stage::Connect(_))) => None,
        Err(Failed::At(Stage::Handshake(e))) => tls_failure(access, &e, true),
        Err(Failed::At(Stage::Exchange(e))) if access.tls().is_some() => {
            tls_failure(access, &e, false)
        }
        Err(Failed::At(Stage::Exchange(e))) => match e.kind() {
            std::io::ErrorKind::TimedOut => None,
            _ => Some(plain_on_tls(&e.to_string())),
        },
    }
}

/// A plaintext request's answer: none at all (the member closed the connection when its TLS
/// handshake failed on the request's bytes), a TLS record (an alert) or Go's "HTTP request to
/// an HTTPS server" means the port serves TLS.
fn plaintext_answer(access: &Access, answer: &[u8]) -> Option<String> {
    if access.tls().is_some() {
        return None;
    }
    if answer.is_empty() {
        return Some(plain_on_tls("the connection closed without an answer"));
    }
    let text = String::from_utf8_lossy(answer);
    let tls_record = answer.first().is_some_and(|b| (0x14..=0x17).contains(b));
    (tls_record || text.contains("HTTPS"))
        .then(|| plain_on_tls(text.lines().next().unwrap_or("a TLS record")))
}

fn plain_on_tls(said: &str) -> String {
    format!(
        "the member closed the connection on a plaintext request: this port serves TLS; set \
         `etcd.tls` (with `ca` = the CA that signed the members' certificates, and `cert` / \
         `key` if they ask for a client certificate) (client said: {said})"
    )
}

/// What a failed handshake (`handshake`) or a failure right after it means.
fn tls_failure(access: &Access, e: &std::io::Error, handshake: bool) -> Option<String> {
    let tls = access.tls()?;
    let (refusal, said) = tls_failure::classify(e, handshake)?;
    let cert = || match (&tls.cert, &tls.key) {
        (Some(c), Some(k)) => format!("etcd.tls.cert = {} (key {})", c.display(), k.display()),
        _ => "no client certificate (`etcd.tls.cert` / `etcd.tls.key` unset)".to_string(),
    };
    let meaning = match refusal {
        Refusal::UnknownIssuer => format!(
            "certificate signed by unknown authority: the member's chain does not end at {}; \
             set `etcd.tls.ca` to the CA file that signed the members' certificates",
            match &tls.ca {
                Some(ca) => format!("etcd.tls.ca = {}", ca.display()),
                None => "the system's trusted roots (no `etcd.tls.ca` set)".to_string(),
            }
        ),
        Refusal::NotValidForName => format!(
            "the member's certificate does not name `{}`: set `etcd.tls.server_name` to a name \
             the certificate carries, or write the address with one in `etcd.endpoints`",
            tls.server_name
                .clone()
                .unwrap_or_else(|| host_port(&access.urls[0]).to_string())
        ),
        Refusal::ServerExpired => "the member's certificate has expired (or the clocks \
                                   disagree): renew the members' certificates"
            .to_string(),
        Refusal::CertificateRequired => format!(
            "the member requires a client certificate (`--client-cert-auth`) and got {}: set \
             `etcd.tls.cert` and `etcd.tls.key` to a certificate signed by the CA the members \
             trust (`--trusted-ca-file`)",
            cert()
        ),
        Refusal::ClientRefused => format!(
            "the member refused the client certificate, {}: it is expired, not yet valid or not \
             signed by the CA the members trust (`--trusted-ca-file`); set `etcd.tls.cert` and \
             `etcd.tls.key` to a valid certificate of that CA",
            cert()
        ),
        Refusal::NotTls => "the member does not speak TLS on this port (it answered the TLS \
                            handshake in plaintext, or closed): remove `etcd.tls`, or point \
                            `etcd.endpoints` at the members' TLS client URLs"
            .to_string(),
        Refusal::HandshakeFailed => "the TLS handshake failed: check `etcd.tls`".to_string(),
    };
    Some(format!("{meaning} (client said: {said})"))
}

/// The words for a gRPC status a member answered (authentication, permissions), naming the
/// setting or the permission; `None` for any other status.
pub(crate) fn explain_status(e: &etcd_client::Error, access: &Access) -> Option<String> {
    let etcd_client::Error::GRpcStatus(status) = e else {
        return None;
    };
    let msg = status.message();
    let user = access
        .user()
        .unwrap_or("(the client certificate's common name)");
    let meaning = if msg.contains("authentication failed") {
        format!(
            "authentication failed as user `{user}`: the members reject this user's password \
             (or the user does not exist); check `etcd.user` and the password in \
             `etcd.password_env` / `etcd.password_file`"
        )
    } else if msg.contains("user name is empty") || msg.contains("invalid auth token") {
        "the cluster has authentication on and the client has no user: set `etcd.user` and \
         `etcd.password_env` (or `etcd.password_file`), or present a client certificate whose \
         common name is a user (`etcd.tls.cert`)"
            .to_string()
    } else if msg.contains("authentication is not enabled") {
        "the cluster has authentication off (`etcdctl auth enable` was not run): remove \
         `etcd.user` and its password, or enable authentication"
            .to_string()
    } else if msg.contains("user name not found") {
        format!("user `{user}` does not exist: create it (`etcdctl user add {user}`)")
    } else {
        return None;
    };
    Some(format!("{meaning} (server said: {msg})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Endpoints;

    #[test]
    fn a_plaintext_answer_that_says_https_means_tls() {
        let e = Endpoints::from_iter([("etcd", vec!["http://a:1".to_string()])]);
        let access = Access::new(&e).unwrap();
        let answer =
            b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
        assert!(
            plaintext_answer(&access, answer)
                .unwrap()
                .contains("set `etcd.tls`")
        );
        assert!(plaintext_answer(&access, b"HTTP/1.0 200 OK\r\n\r\n{}").is_none());
        assert!(plaintext_answer(&access, &[0x15, 3, 1, 0, 2]).is_some());
        assert!(plaintext_answer(&access, b"").is_some());
    }
}
