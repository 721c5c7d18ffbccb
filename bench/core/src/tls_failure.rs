//! What a failed TLS exchange with a server means, told apart by where it failed and what
//! rustls said. Each system's diagnosis of a failed connect (etcd's, ZooKeeper's)
//! speaks to a server itself with the group's TLS settings and words the [`Refusal`] for its
//! own settings and server options; the classification is the same for all of them.
//!
//! What each case looks like to a rustls 0.23 client:
//! - **wrong CA**: rustls refuses the server's chain, `UnknownIssuer` (`BadSignature` for
//!   another CA of the same name);
//! - **a certificate that does not name the host or `server_name`**: `NotValidForName`;
//! - **the server's certificate expired**: `Expired`, not in an alert;
//! - **no client certificate where one is required**: alert `CertificateRequired`;
//! - **a client certificate the server refuses** (expired, another CA's): a fatal alert
//!   (`BadCertificate`, `CertificateExpired`, `UnknownCA`, `CertificateUnknown`), under TLS 1.3
//!   on the first read after the handshake;
//! - **TLS against a plaintext port**: no TLS record comes back (`InvalidContentType`, a
//!   corrupt message), or the server closes the connection during the handshake.

/// Where one of lockbench's own exchanges with a server failed.
#[derive(Debug)]
pub enum Stage {
    /// No TCP connection (a server down or cut off: not a setting to fix).
    Connect(std::io::Error),
    /// The TLS handshake failed.
    Handshake(std::io::Error),
    /// Sending the request or reading the answer failed.
    Exchange(std::io::Error),
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Connect(e) => write!(f, "connect: {e}"),
            Stage::Handshake(e) => write!(f, "TLS handshake: {e}"),
            Stage::Exchange(e) => write!(f, "{e}"),
        }
    }
}

/// An I/O error that says a stage ran out of time.
pub fn timed_out() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time")
}

/// What a TLS failure means for the client's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The server's chain does not end at the CA the client trusts.
    UnknownIssuer,
    /// The server's certificate does not name the host (or the server name) checked.
    NotValidForName,
    /// The server's certificate has expired (or the clocks disagree).
    ServerExpired,
    /// The server requires a client certificate and got none.
    CertificateRequired,
    /// The server refused the client certificate it got (an alert).
    ClientRefused,
    /// The port does not speak TLS.
    NotTls,
    /// The handshake failed otherwise.
    HandshakeFailed,
}

/// What `e`, from the handshake (`handshake`) or right after it, means, and the client's own
/// words for it; `None` for a timeout or a failure after the handshake that is not TLS's.
pub fn classify(e: &std::io::Error, handshake: bool) -> Option<(Refusal, String)> {
    let said = match e.get_ref() {
        Some(inner) => format!("{inner}"),
        None => e.to_string(),
    };
    let debug = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .map(|r| format!("{r:?}"))
        .unwrap_or_else(|| format!("{e:?}"));
    let both = format!("{said} {debug}").to_ascii_lowercase();
    let refusal = if both.contains("unknownissuer") || both.contains("badsignature") {
        Refusal::UnknownIssuer
    } else if both.contains("notvalidforname") {
        Refusal::NotValidForName
    } else if both.contains("expired") && !both.contains("alert") {
        Refusal::ServerExpired
    } else if both.contains("certificaterequired") {
        Refusal::CertificateRequired
    } else if both.contains("alert") {
        Refusal::ClientRefused
    } else if both.contains("invalidcontenttype")
        || both.contains("invalidmessage")
        || both.contains("corrupt message")
        || (handshake
            && matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
            ))
    {
        Refusal::NotTls
    } else if e.kind() == std::io::ErrorKind::TimedOut || !handshake {
        return None;
    } else {
        Refusal::HandshakeFailed
    };
    Some((refusal, said))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn rustls_errors_and_closed_handshakes_are_told_apart() {
        let tls = |e: rustls::Error| Error::new(ErrorKind::InvalidData, e);
        let unknown = tls(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        assert_eq!(classify(&unknown, true).unwrap().0, Refusal::UnknownIssuer);
        let alert = tls(rustls::Error::AlertReceived(
            rustls::AlertDescription::CertificateUnknown,
        ));
        assert_eq!(classify(&alert, false).unwrap().0, Refusal::ClientRefused);
        let eof = Error::new(ErrorKind::UnexpectedEof, "tls handshake eof");
        assert_eq!(classify(&eof, true).unwrap().0, Refusal::NotTls);
        assert_eq!(classify(&eof, false), None);
        assert_eq!(classify(&timed_out(), true), None);
    }
}
