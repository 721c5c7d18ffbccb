//! [`LinkProxy`]: one TCP link fault point, run in-process: a small Toxiproxy (latency and
//! timeout toxics) written for lockbench.
//!
//! Why a proxy: `tc netem` is not available on these kernels, so latency cannot be added in
//! the network namespaces. Instead a client reaches a server through a proxy that lockbench
//! runs inside its own process; the proxy forwards bytes unchanged until a fault adds a
//! *toxic* to it:
//!
//! - [`LinkProxy::set_latency`]: Toxiproxy's `latency` toxic on the server's replies
//!   (downstream, Toxiproxy's default direction): every reply chunk is delivered `latency ±
//!   jitter` after it arrived (in order, pipelined like a slow wire), so every request/response
//!   round trip through the link takes that much longer, and a closed-loop client's rate over
//!   one connection is capped at one round trip per `rtt + latency` (what capacity planning
//!   wants to provoke).
//! - [`LinkProxy::blackhole`]: Toxiproxy's `timeout` toxic with `timeout = 0`, both
//!   directions: connections stay open, bytes are swallowed, nothing arrives, until
//!   [`LinkProxy::clear`]. Swallowed bytes are gone (unlike an iptables DROP, which TCP
//!   retransmits after the heal), so clients time out and reconnect.
//!
//! Why not the `noxious` crate (the Rust Toxiproxy port DESIGN.md names): noxious 1.0.4 never
//! sets `TCP_NODELAY` on either leg and gives no access to its sockets, so every message a
//! client writes in two pieces waits for the peer's delayed ACK (~40 ms): measured here,
//! etcd-lease's uncontended acquire p50 went from 3.0 ms direct to 45 ms through an *empty*
//! noxious proxy. A lock benchmark cannot carry that, so this proxy sets `TCP_NODELAY` on
//! both legs and is otherwise the same two toxics.
//!
//! Use it directly (it is all a caller needs to cap or cut one backend link):
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use lockbench_chaos::LinkProxy;
//! use std::time::Duration;
//! let proxy = LinkProxy::start("redis", "127.0.0.1".parse()?, "127.0.0.1:16379").await?;
//! // point the client at proxy.addr() instead of 127.0.0.1:16379, then:
//! proxy.set_latency(Duration::from_millis(50), Duration::ZERO).await?;
//! proxy.clear().await?; // back to a plain forwarder
//! # Ok(()) }
//! ```
//!
//! The proxy stops (its listener and every link) when the [`LinkProxy`] is dropped.

use anyhow::Context;
use rand::Rng;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// What the link does to bytes right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Toxic {
    /// Forward unchanged.
    None,
    /// Deliver reply chunks `latency ± jitter` after they arrived.
    Latency(Duration, Duration),
    /// Swallow every byte, both ways.
    Blackhole,
}

/// One in-process TCP proxy from a listening address to one upstream server.
#[derive(Debug)]
pub struct LinkProxy {
    name: String,
    addr: SocketAddr,
    upstream: String,
    toxic: watch::Sender<Toxic>,
    accept: JoinHandle<()>,
}

impl LinkProxy {
    /// Starts a proxy named `name` listening on a free port of `bind` and forwarding to
    /// `upstream` (`host:port`, connected anew for every client connection). Clients must be
    /// pointed at [`LinkProxy::addr`].
    pub async fn start(name: &str, bind: IpAddr, upstream: &str) -> anyhow::Result<LinkProxy> {
        let listener = TcpListener::bind((bind, 0))
            .await
            .with_context(|| format!("cannot bind the link proxy {name} on {bind}"))?;
        let addr = listener.local_addr()?;
        let (toxic, _) = watch::channel(Toxic::None);
        let accept = tokio::spawn(accept_loop(listener, upstream.to_string(), toxic.clone()));
        Ok(LinkProxy {
            name: name.to_string(),
            addr,
            upstream: upstream.to_string(),
            toxic,
            accept,
        })
    }

    /// Where clients connect instead of the upstream server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server this proxy forwards to (`host:port`).
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// The proxy's name (the server's name, or `client->server` in a [`crate::LinkProxies`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds `latency` (± uniform `jitter`) to every reply from the server, replacing any
    /// toxic in effect. Open connections are affected at once.
    pub async fn set_latency(&self, latency: Duration, jitter: Duration) -> anyhow::Result<()> {
        self.toxic.send_replace(Toxic::Latency(latency, jitter));
        Ok(())
    }

    /// Swallows every byte in both directions (connections stay open), replacing any toxic in
    /// effect.
    pub async fn blackhole(&self) -> anyhow::Result<()> {
        self.toxic.send_replace(Toxic::Blackhole);
        Ok(())
    }

    /// Removes the toxic: the proxy forwards bytes unchanged again (chunks already delayed
    /// still arrive at their time).
    pub async fn clear(&self) -> anyhow::Result<()> {
        self.toxic.send_replace(Toxic::None);
        Ok(())
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        // The accept task owns every connection's tasks: aborting it closes them all.
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, upstream: String, toxic: watch::Sender<Toxic>) {
    let mut links = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                links.spawn(link(client, upstream.clone(), toxic.subscribe()));
            }
            Some(_) = links.join_next(), if !links.is_empty() => {}
        }
    }
}

/// One client connection: both legs without Nagle, a pump per direction.
async fn link(client: TcpStream, upstream: String, toxic: watch::Receiver<Toxic>) {
    let Ok(server) = TcpStream::connect(&upstream).await else {
        return; // the client sees its connection closed, as with a dead server
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_r, client_w) = client.into_split();
    let (server_r, server_w) = server.into_split();
    let up = pump(client_r, server_w, toxic.clone(), false);
    let down = pump(server_r, client_w, toxic, true);
    // When one direction ends (EOF or error), the other is dropped with it.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// Copies `from` to `to`, applying the toxic in effect when each chunk arrives: swallowed
/// under a black-hole; on the reply direction (`replies`), held until `arrival + latency ±
/// jitter` (never before an earlier chunk: order is kept).
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    toxic: watch::Receiver<Toxic>,
    replies: bool,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 32 * 1024];
        let mut last_due = Instant::now();
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let now = Instant::now();
            let due = match *toxic.borrow() {
                Toxic::Blackhole => continue,
                Toxic::Latency(latency, jitter) if replies => {
                    let j = jitter.as_micros() as i64;
                    let offset = if j > 0 {
                        rand::rng().random_range(-j..=j)
                    } else {
                        0
                    };
                    let delay = (latency.as_micros() as i64 + offset).max(0) as u64;
                    now + Duration::from_micros(delay)
                }
                _ => now,
            };
            last_due = last_due.max(due);
            if tx.send((last_due, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    };
    tokio::join!(reader, writer);
}
