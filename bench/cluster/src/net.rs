//! The little networking the health checks need: one request, one reply, over a plain
//! `TcpStream`, always under a timeout (a paused or half-started server must not hang `up`).

use anyhow::{Context, anyhow, bail};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one probe may take, connect included.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to `addr`, sends `request`, and reads until the server closes the connection or
/// `done` says the reply is complete.
pub(crate) async fn exchange(
    addr: &str,
    request: &[u8],
    done: impl Fn(&[u8]) -> bool,
) -> anyhow::Result<Vec<u8>> {
    let work = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(request).await?;
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if done(&reply) {
                break;
            }
        }
        anyhow::Ok(reply)
    };
    tokio::time::timeout(PROBE_TIMEOUT, work)
        .await
        .map_err(|_| anyhow!("{addr}: no reply within {PROBE_TIMEOUT:?}"))?
        .with_context(|| addr.to_string())
}

/// `GET path` over HTTP/1.0 against a base URL like `http://127.0.0.1:2379`; returns the body
/// of a 200 reply.
pub(crate) async fn http_get(base_url: &str, path: &str) -> anyhow::Result<String> {
    let hostport = base_url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("{base_url}: only http:// URLs are supported"))?
        .trim_end_matches('/');
    let request = format!("GET {path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n");
    let reply = exchange(hostport, request.as_bytes(), |_| false).await?;
    let text = String::from_utf8_lossy(&reply);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("{base_url}{path}: malformed HTTP reply"))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        bail!("{base_url}{path}: {status}");
    }
    Ok(body.to_string())
}
