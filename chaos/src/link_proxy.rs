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
//!
//! The same proxy also takes any set of named [`Toxic`]s on either direction
//! ([`LinkProxy::add_toxic`], ...) and can be disabled and enabled (listener and links closed,
//! then the same address bound again): that is what the Toxiproxy-compatible HTTP API
//! ([`crate::ToxiproxyApi`]) drives. [`LinkProxy::set_latency`] and [`LinkProxy::blackhole`]
//! are shorthands that replace every toxic with theirs. One deliberate difference from
//! Toxiproxy: removing a `timeout` toxic leaves the links open (Toxiproxy closes them), so a
//! healed black hole behaves the same through the API as through the link nemesis; clients
//! whose bytes were swallowed time out and reconnect.

use crate::link_toxic::{Fate, LinkView, Stream, Toxic, ToxicKind, ToxicSet};
use anyhow::Context;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// One in-process TCP proxy from a listening address to one upstream server.
#[derive(Debug)]
pub struct LinkProxy {
    name: String,
    addr: SocketAddr,
    upstream: String,
    toxics: watch::Sender<ToxicSet>,
    /// While enabled: the accept loop (it owns every link's task) and its stop signal.
    accept: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
}

impl LinkProxy {
    /// Starts a proxy named `name` listening on a free port of `bind` and forwarding to
    /// `upstream` (`host:port`, connected anew for every client connection). Clients must be
    /// pointed at [`LinkProxy::addr`].
    pub async fn start(name: &str, bind: IpAddr, upstream: &str) -> anyhow::Result<LinkProxy> {
        let mut proxy = LinkProxy::new(name, SocketAddr::new(bind, 0), upstream);
        proxy.enable().await?;
        Ok(proxy)
    }

    /// A disabled proxy that will listen on `listen` (port 0: a free port, chosen when it is
    /// first enabled) and forward to `upstream`. Toxics may be added before it is enabled.
    pub fn new(name: &str, listen: SocketAddr, upstream: &str) -> LinkProxy {
        LinkProxy {
            name: name.to_string(),
            addr: listen,
            upstream: upstream.to_string(),
            toxics: watch::channel(ToxicSet::default()).0,
            accept: None,
        }
    }

    /// Where clients connect instead of the upstream server (once enabled, the bound
    /// address: the port is never 0).
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

    /// `true` while it listens.
    pub fn is_enabled(&self) -> bool {
        self.accept.is_some()
    }

    /// Starts listening (on the address it had, so a re-enabled proxy keeps its port).
    /// Nothing happens if it is enabled already.
    pub async fn enable(&mut self) -> anyhow::Result<()> {
        if self.is_enabled() {
            return Ok(());
        }
        let listener = TcpListener::bind(self.addr).await.with_context(|| {
            format!("cannot listen on {} (link proxy {})", self.addr, self.name)
        })?;
        self.addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let accept = tokio::spawn(accept_loop(
            listener,
            self.upstream.clone(),
            self.toxics.clone(),
            stopped,
        ));
        self.accept = Some((stop, accept));
        Ok(())
    }

    /// Stops listening and closes every link (Toxiproxy's `enabled = false`: the server looks
    /// down); both are done when this returns. Toxics stay.
    pub async fn disable(&mut self) {
        if let Some((stop, accept)) = self.accept.take() {
            let _ = stop.send(());
            let _ = accept.await;
        }
    }

    /// Disables the proxy and points it at a new listen address and upstream (enable it
    /// again to use them). Toxics stay.
    pub async fn retarget(&mut self, listen: SocketAddr, upstream: &str) {
        self.disable().await;
        self.addr = listen;
        self.upstream = upstream.to_string();
    }

    /// The toxics in effect, in the order they were added.
    pub fn toxics(&self) -> Vec<Toxic> {
        self.toxics.borrow().list()
    }

    /// Adds `toxic` (open links are affected at once); `false`, and nothing changes, when a
    /// toxic of that name exists.
    pub fn add_toxic(&self, toxic: Toxic) -> bool {
        self.toxics.send_if_modified(|set| set.add(toxic))
    }

    /// Replaces the toxic named like `toxic` (its toxicity is drawn again and a timeout
    /// restarts); `false` when there is none.
    pub fn replace_toxic(&self, toxic: Toxic) -> bool {
        self.toxics.send_if_modified(|set| set.replace(toxic))
    }

    /// Removes the toxic `name`; `false` when there is none. Chunks already delayed still
    /// arrive at their time.
    pub fn remove_toxic(&self, name: &str) -> bool {
        self.toxics.send_if_modified(|set| set.remove(name))
    }

    /// Adds `latency` (± uniform `jitter`) to every reply from the server (Toxiproxy's
    /// `latency` toxic, downstream), replacing any toxic in effect. Open connections are
    /// affected at once.
    pub async fn set_latency(&self, latency: Duration, jitter: Duration) -> anyhow::Result<()> {
        let kind = ToxicKind::Latency { latency, jitter };
        self.set(vec![Toxic::new(Stream::Downstream, kind)]);
        Ok(())
    }

    /// Swallows every byte in both directions (connections stay open: Toxiproxy's `timeout`
    /// toxic with timeout 0, both streams), replacing any toxic in effect.
    pub async fn blackhole(&self) -> anyhow::Result<()> {
        let hole = ToxicKind::Timeout {
            timeout: Duration::ZERO,
        };
        self.set(vec![
            Toxic::new(Stream::Upstream, hole),
            Toxic::new(Stream::Downstream, hole),
        ]);
        Ok(())
    }

    /// Removes every toxic: the proxy forwards bytes unchanged again (chunks already delayed
    /// still arrive at their time).
    pub async fn clear(&self) -> anyhow::Result<()> {
        self.set(Vec::new());
        Ok(())
    }

    fn set(&self, toxics: Vec<Toxic>) {
        self.toxics.send_modify(|set| set.set(toxics));
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        // The accept task owns every link's task: aborting it closes them all (soon after;
        // `disable` is the way to know when).
        if let Some((_, accept)) = self.accept.take() {
            accept.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: String,
    toxics: watch::Sender<ToxicSet>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut links = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                links.spawn(link(client, upstream.clone(), toxics.subscribe()));
            }
            Some(_) = links.join_next(), if !links.is_empty() => {}
            _ = &mut stop => break,
        }
    }
    drop(listener);
    links.shutdown().await;
}

/// One client connection: both legs without Nagle, a pump per direction.
async fn link(client: TcpStream, upstream: String, toxics: watch::Receiver<ToxicSet>) {
    let Ok(server) = TcpStream::connect(&upstream).await else {
        return; // the client sees its connection closed, as with a dead server
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_r, client_w) = client.into_split();
    let (server_r, server_w) = server.into_split();
    let up = pump(client_r, server_w, toxics.clone(), Stream::Upstream);
    let down = pump(server_r, client_w, toxics, Stream::Downstream);
    // When one direction ends (EOF, error or a timeout toxic), the other is dropped with it.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// Copies `from` to `to`, giving each chunk the fate the toxics of `stream` in effect when it
/// arrived decide (delivered at its time, in order, or swallowed), and ends the link when a
/// `timeout` toxic's time is up.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut toxics: watch::Receiver<ToxicSet>,
    stream: Stream,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            // Only a real delay sleeps: tokio's timer rounds every deadline up to its next
            // millisecond tick, which added ~1 ms per chunk to a clean link (measured: PING
            // p50 through the proxy 2.3 ms vs 0.02 ms direct, before this check).
            if due > Instant::now() {
                tokio::time::sleep_until(due).await;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut rng = SmallRng::from_rng(&mut rand::rng());
        let mut view = LinkView::new(stream);
        view.sync(&toxics.borrow_and_update(), Instant::now(), &mut rng);
        let mut buf = vec![0u8; 32 * 1024];
        let mut last_due = Instant::now();
        loop {
            let deadline = view.deadline();
            tokio::select! {
                read = from.read(&mut buf) => {
                    let n = match read {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let now = Instant::now();
                    if toxics.has_changed().unwrap_or(false) {
                        view.sync(&toxics.borrow_and_update(), now, &mut rng);
                    }
                    let Fate::At(due) = view.fate(now, &mut rng) else {
                        continue;
                    };
                    last_due = last_due.max(due);
                    if tx.send((last_due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                changed = toxics.changed() => {
                    if changed.is_err() {
                        break; // the proxy is gone
                    }
                    view.sync(&toxics.borrow_and_update(), Instant::now(), &mut rng);
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)),
                    if deadline.is_some() => break,
            }
        }
    };
    tokio::join!(reader, writer);
}
