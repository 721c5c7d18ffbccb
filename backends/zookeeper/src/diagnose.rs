//! Why a ZooKeeper connect failed (or would), in words that name the member, the setting and
//! the fix.
//!
//! `zookeeper-client` reports a refused TLS handshake, a member that closed a plaintext
//! connection and a member that is down alike: no member gave it a session. So lockbench speaks
//! to each member itself, one four-letter word (`srvr`) over a connection set up as the
//! group's settings say (TLS with the CA, the client certificate and the server name; or
//! plaintext), whose handshake and answer tell the cases apart. Under TLS this runs before an
//! ensemble's first session too, which is where `tls.server_name` is checked (`crate::tls`).
//! A member that is down or silent is not a setting to fix: the probe says nothing about it.
//!
//! What each case looks like from here (ZooKeeper 3.8 with Netty's secure client port, rustls
//! 0.23):
//! - **wrong CA**: rustls refuses the member's chain (`UnknownIssuer`, or `BadSignature` for
//!   another CA of the same name);
//! - **`tls.server_name` (or the address) the certificate lacks**: `NotValidForName`;
//! - **a client certificate the member refuses** (expired, another CA's): the member sends a
//!   fatal alert (`BadCertificate`, `CertificateExpired`, `UnknownCA`), under TLS 1.3 on the
//!   first read after the handshake;
//! - **no client certificate where one is required** (`ssl.clientAuth=need`): an alert too;
//! - **TLS against a plaintext port**: the plaintext port reads the ClientHello as a request
//!   length far over its limit and closes the connection: the handshake ends without a record;
//! - **plaintext against a TLS port**: Netty fails its handshake on `srvr`'s bytes and closes
//!   the connection without an answer.

use crate::tls::ZkTls;
use lockbench_core::tls_failure::{self, Refusal, Stage};
use std::time::Duration;
use tokio::net::TcpStream;

/// Each stage of one probe (TCP connect, handshake, answer).
const PROBE_BUDGET: Duration = Duration::from_millis(1000);

/// The TLS handshake's budget when `tls.server_name` is set: the crate then does not check
/// the name, so this handshake is the check, and a member that answers it late (a loaded
/// machine, a debug build's crypto) must not pass unchecked for want of patience.
const NAME_CHECK_BUDGET: Duration = Duration::from_secs(5);

/// The first member (`host:port`) whose answer shows a setting to fix, and what to fix;
/// `None` when every member answers as the settings expect, or is down or silent.
pub(crate) async fn misconfigured(
    members: &[String],
    tls: Option<&ZkTls>,
) -> Option<(String, String)> {
    let mut probes = tokio::task::JoinSet::new();
    for member in members {
        let (member, tls) = (member.clone(), tls.cloned());
        probes.spawn(async move {
            let found = probe(&member, tls.as_ref()).await;
            found.map(|why| (member, why))
        });
    }
    while let Some(done) = probes.join_next().await {
        if let Ok(Some(found)) = done {
            return Some(found);
        }
    }
    None
}

/// What is wrong with the settings for `member`, from one `srvr` (a member that does not
/// answer within the budget is silent, not misconfigured).
async fn probe(member: &str, tls: Option<&ZkTls>) -> Option<String> {
    match tls {
        None => {
            let tcp = match tokio::time::timeout(PROBE_BUDGET, TcpStream::connect(member)).await {
                Ok(Ok(s)) => s,
                _ => return None,
            };
            // Five bytes: a TLS port (Netty) waits for a whole record header before it fails
            // the handshake, and a plaintext one reads the first four as the word.
            match tokio::time::timeout(PROBE_BUDGET, crate::counters::ask(tcp, "srvr\n")).await {
                Ok(Ok(answer)) => plaintext_answer(&answer),
                Ok(Err(e)) => match e.kind() {
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => {
                        Some(plain_on_tls(&e.to_string()))
                    }
                    _ => None,
                },
                Err(_) => None,
            }
        }
        Some(tls) => {
            let budget = if tls.settings.server_name.is_some() {
                NAME_CHECK_BUDGET
            } else {
                PROBE_BUDGET
            };
            let stream = match tls.handshake(member, budget).await {
                Ok(s) => s,
                Err(Stage::Connect(_)) => return None,
                Err(failed) => return tls_failure(tls, member, &failed),
            };
            match tokio::time::timeout(PROBE_BUDGET, crate::counters::ask(stream, "srvr")).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => tls_failure(tls, member, &Stage::Exchange(e)),
                Err(_) => None,
            }
        }
    }
}

/// A plaintext `srvr`'s answer: none at all means the member closed the connection when its
/// TLS handshake failed on the word's bytes, so the port serves TLS; a TLS record (an alert)
/// says so too.
fn plaintext_answer(answer: &str) -> Option<String> {
    let tls_record = answer
        .as_bytes()
        .first()
        .is_some_and(|b| (0x14..=0x17).contains(b));
    if answer.is_empty() {
        Some(plain_on_tls("the connection closed without an answer"))
    } else if tls_record {
        Some(plain_on_tls("a TLS record"))
    } else {
        None
    }
}

fn plain_on_tls(said: &str) -> String {
    format!(
        "the member closed the connection on a plaintext request: this port serves TLS \
         (`secureClientPort`); set `zookeeper.tls` (with `ca` = the CA that signed the \
         members' certificates, and `cert` / `key` if they ask for a client certificate) \
         (client said: {said})"
    )
}

/// What a failed handshake, or a failure right after it, means for `tls`'s settings.
fn tls_failure(tls: &ZkTls, member: &str, failed: &Stage) -> Option<String> {
    let (e, handshake) = match failed {
        Stage::Connect(_) => return None,
        Stage::Handshake(e) => (e, true),
        Stage::Exchange(e) => (e, false),
    };
    let (refusal, said) = tls_failure::classify(e, handshake)?;
    let settings = &tls.settings;
    let cert = || match (&settings.cert, &settings.key) {
        (Some(c), Some(k)) => format!("zookeeper.tls.cert = {} (key {})", c.display(), k.display()),
        _ => "no client certificate (`zookeeper.tls.cert` / `zookeeper.tls.key` unset)".into(),
    };
    let meaning = match refusal {
        Refusal::UnknownIssuer => format!(
            "certificate signed by unknown authority: the member's chain does not end at \
             zookeeper.tls.ca = {}; set `zookeeper.tls.ca` to the CA file that signed the \
             members' certificates",
            settings
                .ca
                .as_deref()
                .map_or_else(|| "(unset)".into(), |p| p.display().to_string())
        ),
        Refusal::NotValidForName => match &settings.server_name {
            Some(name) => format!(
                "the member's certificate does not name `{name}` (zookeeper.tls.server_name): \
                 set `zookeeper.tls.server_name` to a name the certificate carries, or remove \
                 it to check the address's host"
            ),
            None => format!(
                "the member's certificate does not name `{}`: write the address with a name \
                 (or IP address) the certificate carries in `zookeeper.endpoints`, or set \
                 `zookeeper.tls.server_name` to one",
                lockbench_core::crypto::member_host(member)
            ),
        },
        Refusal::ServerExpired => "the member's certificate has expired (or the clocks \
                                   disagree): renew the members' certificates"
            .to_string(),
        Refusal::CertificateRequired => required(&cert()),
        Refusal::ClientRefused if settings.cert.is_none() => required(&cert()),
        Refusal::ClientRefused => format!(
            "the member refused the client certificate, {}: it is expired, not yet valid or \
             not signed by the CA the members trust (`ssl.trustStore`); set \
             `zookeeper.tls.cert` and `zookeeper.tls.key` to a valid certificate of that CA",
            cert()
        ),
        Refusal::NotTls => "the member does not speak TLS on this port (it closed the \
                            connection on the TLS handshake, or answered in plaintext): remove \
                            `zookeeper.tls`, or point `zookeeper.endpoints` at the members' \
                            `secureClientPort`"
            .to_string(),
        Refusal::HandshakeFailed => "the TLS handshake failed: check `zookeeper.tls`".to_string(),
    };
    Some(format!("{meaning} (client said: {said})"))
}

fn required(got: &str) -> String {
    format!(
        "the member requires a client certificate (`ssl.clientAuth=need`) and got {got}: set \
         `zookeeper.tls.cert` and `zookeeper.tls.key` to a certificate signed by the CA the \
         members trust (`ssl.trustStore`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_close_or_a_tls_record_means_a_tls_port() {
        assert!(
            plaintext_answer("")
                .unwrap()
                .contains("set `zookeeper.tls`")
        );
        assert!(plaintext_answer("\u{15}\u{3}\u{3}").is_some());
        assert!(plaintext_answer("Zookeeper version: 3.8.0\nMode: follower\n").is_none());
    }
}
