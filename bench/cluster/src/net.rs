//! The little networking the health checks need: one request, one reply, over a plain
//! `TcpStream`, always under a timeout (a paused or half-started server must not hang `up`).
//! What to send and how to read the reply is the system's ([`Exchange`], from
//! [`System::health_check`](lockbench_core::System::health_check) and the like); the socket
//! and the timeout are here.

use anyhow::{Context, anyhow};
use lockbench_core::Exchange;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one probe may take, connect included.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs one [`Exchange`]: connects to its address, sends its request, and reads until the
/// server closes the connection or the reply is complete, all within 2 s.
pub async fn exchange(ex: &Exchange) -> anyhow::Result<Vec<u8>> {
    let addr = ex.addr.as_str();
    let work = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(&ex.request).await?;
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if (ex.complete)(&reply) {
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
