//! One HTTP/1.0 `GET` to a member's client URL, over TLS (with the group's CA and client
//! certificate) when the group speaks it: what `/metrics` and the diagnosis of a failed connect
//! ([`crate::diagnose`]) need, without an HTTP client dependency. The member closes the
//! connection after its answer.
//!
//! Why the stages are told apart: a refused TCP connect is a member that is down (not a
//! setting to fix), a failed handshake is a TLS setting, a failure after it a refused client
//! certificate (TLS 1.3 checks it after the client's last handshake message) or a closed port.

use crate::access::{Access, host_port};
use lockbench_core::tls_failure::{Stage, timed_out};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where a [`get`] failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The settings cannot be used (a file unreadable, a bad name); says which.
    Setup(String),
    /// A stage of the exchange (`lockbench_core::tls_failure::Stage`).
    At(Stage),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Setup(s) => f.write_str(s),
            Failed::At(stage) => stage.fmt(f),
        }
    }
}

/// The raw answer (status line, headers, body) to `GET path` at member `url`, each stage
/// bounded by `budget`.
pub(crate) async fn get(
    access: &Access,
    url: &str,
    path: &str,
    budget: Duration,
) -> Result<Vec<u8>, Failed> {
    let authority = host_port(url);
    let tcp = match tokio::time::timeout(budget, TcpStream::connect(authority)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(Failed::At(Stage::Connect(e))),
        Err(_) => return Err(Failed::At(Stage::Connect(timed_out()))),
    };
    let _ = tcp.set_nodelay(true);
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    if access.tls().is_none() {
        return exchange(tcp, &request, budget).await;
    }
    let config = access.rustls_config().map_err(Failed::Setup)?;
    let name = access.server_name(url).map_err(Failed::Setup)?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let stream = match tokio::time::timeout(budget, connector.connect(name, tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(Failed::At(Stage::Handshake(e))),
        Err(_) => return Err(Failed::At(Stage::Handshake(timed_out()))),
    };
    exchange(stream, &request, budget).await
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &str,
    budget: Duration,
) -> Result<Vec<u8>, Failed> {
    let talk = async {
        stream.write_all(request.as_bytes()).await?;
        stream.flush().await?;
        let mut response = Vec::new();
        match stream.read_to_end(&mut response).await {
            Ok(_) => Ok(response),
            // A TLS peer that closes without close_notify after a whole answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {
                Ok(response)
            }
            Err(e) => Err(e),
        }
    };
    match tokio::time::timeout(budget, talk).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(Failed::At(Stage::Exchange(e))),
        Err(_) => Err(Failed::At(Stage::Exchange(timed_out()))),
    }
}
