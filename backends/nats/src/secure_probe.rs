//! The cluster's probes of a secure cluster's client port (the leader check): the same
//! request as on a plain one ([`crate::server::leader_check`]), sent the way NATS lets a client
//! in, which no TLS-first exchange can do
//! ([`System::secure_ask`](lockbench_core::System::secure_ask)).
//!
//! The way in: the server's `INFO` line in clear (`tls_required`), the TLS handshake (the
//! client certificate, the address's host verified), then the request's `CONNECT` with the
//! administrator's user and password added, and the rest of the request. The reply handed
//! back is the `INFO` line followed by what came over TLS, so the probes' readers see what
//! they see on a plain server. The monitoring port's probes (health, version) need none of
//! this: HTTPS is TLS from the first byte, which the cluster's own exchange speaks.

use rustls::pki_types::ServerName;
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `true` for a request in the client protocol (it starts with `CONNECT`), which only this
/// probe can send to a secure server.
pub(crate) fn speaks_client_protocol(request: &[u8]) -> bool {
    request.starts_with(b"CONNECT ")
}

/// `request` with its `CONNECT` logging in as `user` with `password`.
fn logged_in(request: &[u8], user: &str, password: &str) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(request).map_err(|e| e.to_string())?;
    let (connect, rest) = text
        .strip_prefix("CONNECT ")
        .and_then(|t| t.split_once("\r\n"))
        .ok_or("the request has no CONNECT line")?;
    let mut options: serde_json::Value =
        serde_json::from_str(connect).map_err(|e| format!("the CONNECT line: {e}"))?;
    let fields = options
        .as_object_mut()
        .ok_or("the CONNECT line is no object")?;
    fields.insert("user".into(), user.into());
    fields.insert("pass".into(), password.into());
    fields.insert("tls_required".into(), true.into());
    Ok(format!("CONNECT {options}\r\n{rest}").into_bytes())
}

/// `ex` over TLS as the administrator (see the module docs).
pub(crate) async fn ask(
    ex: &lockbench_core::Exchange,
    tls: Arc<rustls::ClientConfig>,
    password: &SecretString,
) -> Result<Vec<u8>, String> {
    let addr = ex.addr.as_str();
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.ends_with(b"\r\n") {
        let n = tcp
            .read(&mut buf)
            .await
            .map_err(|e| format!("reading INFO: {e}"))?;
        if n == 0 || reply.len() > 65536 {
            return Err("no INFO line".into());
        }
        reply.extend_from_slice(&buf[..n]);
    }
    let name = ServerName::try_from(lockbench_core::crypto::member_host(addr).to_string())
        .map_err(|e| e.to_string())?;
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let request = logged_in(
        &ex.request,
        crate::secure::ADMIN_USER,
        password.expose_secret(),
    )?;
    stream
        .write_all(&request)
        .await
        .map_err(|e| format!("sending the login and the request: {e}"))?;
    while !(ex.complete)(&reply) {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| format!("reading the reply: {e}"))?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_line_gets_the_login_and_the_rest_is_kept() {
        let ex = crate::server::leader_check("127.0.0.1:14222");
        assert!(speaks_client_protocol(&ex.request));
        assert!(!speaks_client_protocol(b"GET /healthz HTTP/1.0\r\n\r\n"));
        let out = logged_in(&ex.request, "admin", "pw\"x").unwrap();
        let out = String::from_utf8(out).unwrap();
        let (connect, rest) = out.split_once("\r\n").unwrap();
        let v: serde_json::Value =
            serde_json::from_str(connect.strip_prefix("CONNECT ").unwrap()).unwrap();
        assert_eq!(v["user"], "admin");
        assert_eq!(v["pass"], "pw\"x");
        assert_eq!(v["name"], "lockbench-probe");
        let orig = String::from_utf8(ex.request).unwrap();
        assert_eq!(rest, orig.split_once("\r\n").unwrap().1);
    }
}
