//! [`ToxiproxyApi`]: Toxiproxy's HTTP API over lockbench's own [`LinkProxy`]s.
//!
//! Why: a link proxy that runs on its own (`lockbench proxy --api`, for instance in a container
//! next to the servers) must be driven over the network. Toxiproxy's server cannot be installed here and the `noxious` port
//! leaves Nagle on (see [`crate::LinkProxy`]), but Toxiproxy's API is what every chaos tool
//! already speaks. Serving that API over [`LinkProxy`] lets any Toxiproxy client (the
//! `toxiproxy_rust` crate, `toxiproxy-cli`, Shopify's Ruby and Go clients) create proxies and
//! add toxics, with lockbench's `TCP_NODELAY` proxy underneath.
//!
//! What is covered (the endpoints of Toxiproxy's README, same paths, fields, defaults,
//! status codes and error bodies; `wire.rs` holds the shapes): `GET /version`,
//! `GET|POST /proxies`, `POST /populate`, `GET|POST|PATCH|DELETE /proxies/{proxy}` (with
//! `enabled` to take a server down and back up), `GET|POST /proxies/{proxy}/toxics`,
//! `GET|POST|PATCH|DELETE /proxies/{proxy}/toxics/{toxic}` and `POST /reset`. Toxic types:
//! `latency` and `timeout`; Toxiproxy's other types get a 400 naming the type. Not covered:
//! `GET /metrics`. Like Toxiproxy, requests from browsers (`User-Agent: Mozilla/...`) are
//! refused, so a web page cannot open listeners on the host.
//!
//! ```no_run
//! # async fn f() -> anyhow::Result<()> {
//! use lockbench_chaos::ToxiproxyApi;
//! let api = ToxiproxyApi::new();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8474").await?;
//! api.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```

mod routes;
mod wire;

pub use wire::{ApiError, ProxyJson, ProxySpec, SUPPORTED_TYPES, ToxicJson};

use crate::LinkProxy;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Mutex;

/// The proxies one API server manages, by name.
type Proxies = Arc<Mutex<BTreeMap<String, LinkProxy>>>;

/// A Toxiproxy-compatible API server and the proxies it manages (dropped with it).
#[derive(Clone, Default)]
pub struct ToxiproxyApi {
    proxies: Proxies,
}

impl ToxiproxyApi {
    /// An API with no proxies.
    pub fn new() -> ToxiproxyApi {
        ToxiproxyApi::default()
    }

    /// Creates or replaces proxies as `POST /populate` does: a proxy whose name exists with
    /// the same listen address and upstream is left as it is, one that differs is replaced,
    /// and new ones start (unless `enabled` is false). Returns the proxies named in `specs`.
    pub async fn populate(&self, specs: Vec<ProxySpec>) -> Result<Vec<ProxyJson>, ApiError> {
        let mut out = Vec::new();
        routes::populate_into(&self.proxies, specs, &mut out).await?;
        Ok(out)
    }

    /// Every proxy, as `GET /proxies` shows them.
    pub async fn proxies(&self) -> BTreeMap<String, ProxyJson> {
        let proxies = self.proxies.lock().await;
        proxies
            .iter()
            .map(|(n, p)| (n.clone(), routes::show(p)))
            .collect()
    }

    /// The HTTP routes (axum), for a caller that serves them itself.
    pub fn router(&self) -> axum::Router {
        routes::router(self.proxies.clone())
    }

    /// Serves the API on `listener` until `shutdown` completes, then stops every proxy.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let served = axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await;
        for (_, mut p) in std::mem::take(&mut *self.proxies.lock().await) {
            p.disable().await;
        }
        served
    }
}
