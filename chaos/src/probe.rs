//! Talking to one server from *inside its own host*: one request, one reply, over a blocking
//! `TcpStream` with timeouts, on a thread that has entered the server's namespace.
//!
//! Why inside: a partition drops the coordinator's packets at isolated servers, yet the
//! nemesis must still ask them who leads, or shorten their keys' TTLs. From inside the host
//! the connection goes over its loopback to its own address, which no `-s <peer>` rule drops.
//! In the loopback topology the same call simply connects from here. A container's host is
//! its network namespace (`/proc/<pid>/ns/net`), entered the same way when this process may
//! (root), else the exchange runs inside the container through `docker exec`
//! ([`lockbench_cluster::entry`]).
//!
//! On a secure cluster (`lockbench up --secure`) a secured server answers only TLS with the
//! client certificate (and, for Redis, after `AUTH`): its probes go through the cluster's own
//! TLS probe ([`lockbench_cluster::secure_exchange`], what `up`'s health checks use), run on a
//! small runtime on the thread inside the host. `docker exec`'s bash cannot speak TLS, so a
//! container host is not probed that way (compose has no secure profile).
//!
//! A system's own probing logic (a watched group's leader lookup, a clock jump, a fault it
//! offers) reaches servers the same way, through [`Probes`], this module as a
//! [`ServerAccess`]; a request its logic marks [`Login::Admin`] logs in as the system's
//! administrator ([`System::admin_user`]).

use crate::Reach;
use anyhow::Context;
use lockbench_cluster::{Host, SecureProbe, ServerSpec, System};
use lockbench_core::{Exchange, Login, Pending, ServerAccess};
use std::net::SocketAddr;
use std::time::Duration;

/// How long one probe may take (connect, then each read).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Sends `request` to `spec`'s client port and reads until EOF or `done(reply)`.
pub(crate) async fn exchange(
    reach: &dyn Reach,
    spec: &ServerSpec,
    request: Vec<u8>,
    done: fn(&[u8]) -> bool,
) -> anyhow::Result<Vec<u8>> {
    exchange_as(reach, spec, request, done, None).await
}

/// [`exchange`], logged in on a secure cluster as `login`: lockbench's user, or the system's
/// administrator ([`System::admin_user`], for requests that user may not send:
/// [`SecureProbe::as_admin`]). `Err` is the failure as a note says it. The same as
/// [`exchange`] on a plain cluster.
async fn ask(
    reach: &dyn Reach,
    spec: &ServerSpec,
    request: Vec<u8>,
    done: fn(&[u8]) -> bool,
    login: Login,
) -> Result<Vec<u8>, String> {
    let admin = match login {
        Login::Client => None,
        Login::Admin => spec.system.admin_user(),
    };
    let reply = exchange_as(reach, spec, request, done, admin).await;
    reply.map_err(|e| format!("{e:#}"))
}

/// The servers as a system's own probing logic reaches them ([`ServerAccess`]: a watched
/// group's leader lookup, a clock jump), through this module's probes of `reach`.
pub(crate) struct Probes<'a>(pub(crate) &'a dyn Reach);

impl ServerAccess for Probes<'_> {
    fn endpoint(&self, spec: &ServerSpec) -> String {
        self.0.topology().endpoint(spec)
    }

    fn client_addr(&self, spec: &ServerSpec) -> SocketAddr {
        self.0.topology().client_addr(spec)
    }

    fn ask<'a>(
        &'a self,
        spec: &'static ServerSpec,
        request: Vec<u8>,
        complete: fn(&[u8]) -> bool,
        login: Login,
    ) -> Pending<'a, Result<Vec<u8>, String>> {
        Box::pin(ask(self.0, spec, request, complete, login))
    }
}

/// [`exchange`], logged in on a secure cluster as the system's administrator `admin` (when
/// given) instead of lockbench's user: for requests that user may not send
/// ([`SecureProbe::as_admin`]). The same as [`exchange`] on a plain cluster.
async fn exchange_as(
    reach: &dyn Reach,
    spec: &ServerSpec,
    request: Vec<u8>,
    done: fn(&[u8]) -> bool,
    admin: Option<&str>,
) -> anyhow::Result<Vec<u8>> {
    let addr = reach.topology().client_addr(spec);
    let host = reach.server_host(spec);
    let secure = secure_for(reach, spec)?;
    let secure = match admin {
        Some(user) => secure.map(|sec| sec.as_admin(user)),
        None => secure,
    };
    let reply = match secure {
        Some(sec) => {
            let ex = Exchange {
                addr: addr.to_string(),
                request,
                complete: done,
            };
            secure_exchange(host, ex, sec, spec.system).await
        }
        None => {
            tokio::task::spawn_blocking(move || match host {
                Some(host) => host.exchange(addr, request, done, PROBE_TIMEOUT),
                None => {
                    lockbench_cluster::entry::exchange_here(addr, &request, done, PROBE_TIMEOUT)
                }
            })
            .await?
        }
    };
    reply.with_context(|| format!("{} ({addr})", spec.name))
}

/// `spec`'s endpoint as its probes name it: on a secure cluster that secures it, its
/// [`System::secure_endpoint`] (etcd's `https://`, for which etcd's leader check asks what a
/// TLS client may), else its plain one.
pub(crate) fn endpoint(reach: &dyn Reach, spec: &ServerSpec) -> anyhow::Result<String> {
    let addr = reach.topology().client_addr(spec);
    Ok(match secure_for(reach, spec)? {
        Some(_) => spec.system.secure_endpoint(addr),
        None => spec.system.endpoint(addr),
    })
}

/// What probes of `spec` need to speak TLS: `None` on a plain cluster or when `spec` stays
/// plain on a secure one ([`lockbench_cluster::secure::honoured`]).
fn secure_for(reach: &dyn Reach, spec: &ServerSpec) -> anyhow::Result<Option<SecureProbe>> {
    Ok(reach
        .secure_probe()
        .context("cannot read the secure cluster's certificates and password")?
        .filter(|_| lockbench_cluster::secure::honoured(spec)))
}

/// `ex` over TLS as [`lockbench_cluster::secure_exchange`] runs it, from inside `host` (a thread
/// in its namespace, with a runtime of its own there) or, without one, from here.
async fn secure_exchange(
    host: Option<Host>,
    ex: Exchange,
    sec: SecureProbe,
    system: &'static dyn System,
) -> anyhow::Result<Vec<u8>> {
    let Some(host) = host else {
        return lockbench_cluster::secure_exchange(&ex, &sec, system).await;
    };
    let inside = move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(lockbench_cluster::secure_exchange(&ex, &sec, system))
    };
    tokio::task::spawn_blocking(move || host.run_inside(inside).and_then(|r| r)).await?
}
