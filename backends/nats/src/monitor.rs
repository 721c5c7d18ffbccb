//! The monitoring port's HTTP (HTTPS on a secure cluster), from async code: `GET path` and its JSON body, for the counters
//! (`/connz`) and the tests. The cluster's own probes are `Exchange`s (`server.rs`); this is
//! the same request, sent on the caller's runtime.
//!
//! A client endpoint may be a link proxy in front of the server (runs with link faults): the
//! monitoring port is then not beside it. So the server is first asked where it listens: the
//! `INFO` line it sends to every new client connection names its `host` and `port`
//! ([`listen_address`]), and the monitoring port is beside that.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The monitoring address (`host:port`) of the server whose client endpoint is `endpoint`
/// (`host:port`, or a `nats://` URL): the client port plus
/// [`MONITOR_OFFSET`](crate::server::MONITOR_OFFSET). `None` for an endpoint without a port.
pub fn monitor_address(endpoint: &str) -> Option<String> {
    let hostport = endpoint.strip_prefix("nats://").unwrap_or(endpoint);
    let (host, port) = hostport.trim_end_matches('/').rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let monitor = port.checked_add(crate::server::MONITOR_OFFSET)?;
    Some(format!("{host}:{monitor}"))
}

/// Where the server behind `endpoint` (itself, or a proxy in front of it) listens for
/// clients, from the `INFO` line it sends first; a wildcard `host` (`0.0.0.0` in a container)
/// is replaced by `endpoint`'s. `None` when it does not say within `budget`. With `tls` (a
/// secure server, whose `INFO` line comes in clear too) the handshake follows and the
/// connection is closed as TLS closes, so the server does not log a broken handshake at every
/// reading.
pub(crate) async fn listen_address(
    endpoint: &str,
    budget: Duration,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Option<String> {
    let hostport = endpoint.strip_prefix("nats://").unwrap_or(endpoint);
    let read = async {
        let mut s = tokio::net::TcpStream::connect(hostport).await.ok()?;
        let mut line = Vec::new();
        let mut buf = [0u8; 2048];
        while !line.ends_with(b"\r\n") {
            let n = s.read(&mut buf).await.ok()?;
            if n == 0 || line.len() > 65536 {
                return None;
            }
            line.extend_from_slice(&buf[..n]);
        }
        let host = lockbench_core::crypto::member_host(hostport).to_string();
        let name = rustls::pki_types::ServerName::try_from(host).ok();
        if let (Some(config), Some(name)) = (tls, name) {
            let connector = tokio_rustls::TlsConnector::from(config.clone());
            if let Ok(mut t) = connector.connect(name, s).await {
                let _ = t.shutdown().await;
            }
        }
        Some(line)
    };
    let line = tokio::time::timeout(budget, read).await.ok()??;
    let text = std::str::from_utf8(&line).ok()?;
    let info: serde_json::Value =
        serde_json::from_str(text.strip_prefix("INFO ")?.lines().next()?).ok()?;
    let port = info.get("port")?.as_u64()?;
    let host = info.get("host").and_then(|h| h.as_str()).unwrap_or("");
    let host = match host {
        "" | "0.0.0.0" | "::" => hostport.rsplit_once(':')?.0,
        h => h,
    };
    Some(format!("{host}:{port}"))
}

/// `GET path` on the monitoring port of `endpoint`'s server, within `budget`: its JSON body.
/// Over HTTPS with `tls` (a secure cluster's monitoring port), the certificate verified
/// against the address's host.
pub(crate) async fn get(
    endpoint: &str,
    path: &str,
    budget: Duration,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<serde_json::Value, String> {
    let addr = monitor_address(endpoint)
        .ok_or_else(|| format!("{endpoint}: no port to find the monitoring port from"))?;
    let ask = async {
        let s = tokio::net::TcpStream::connect(&addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        let reply = match tls {
            None => request(s, &addr, path).await,
            Some(config) => {
                let host = lockbench_core::crypto::member_host(&addr).to_string();
                let name = rustls::pki_types::ServerName::try_from(host)
                    .map_err(|e| format!("{addr}: {e}"))?;
                let s = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, s)
                    .await
                    .map_err(|e| format!("{addr}: TLS handshake: {e}"))?;
                request(s, &addr, path).await
            }
        }?;
        crate::server::body(&reply)
            .ok_or_else(|| format!("{addr}{path}: no JSON body in a 200 reply"))
    };
    tokio::time::timeout(budget, ask)
        .await
        .map_err(|_| format!("{addr}{path}: no reply within {budget:?}"))?
}

/// Sends `GET path` on `s` and reads the reply until the server closes the connection (a TLS
/// peer that closes without its `close_notify` ends the reply as well).
async fn request(
    mut s: impl AsyncRead + AsyncWrite + Unpin,
    addr: &str,
    path: &str,
) -> Result<Vec<u8>, String> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    s.write_all(request.as_bytes())
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut reply = Vec::new();
    match s.read_to_end(&mut reply).await {
        Ok(_) => Ok(reply),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !reply.is_empty() => Ok(reply),
        Err(e) => Err(format!("{addr}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monitoring_port_is_beside_the_client_port() {
        assert_eq!(
            monitor_address("127.0.0.1:14222").as_deref(),
            Some("127.0.0.1:18222")
        );
        assert_eq!(
            monitor_address("nats://10.77.0.61:4222").as_deref(),
            Some("10.77.0.61:8222")
        );
        assert_eq!(monitor_address("nats1"), None);
    }
}
