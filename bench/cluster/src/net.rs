//! The little networking the health checks need: one request, one reply, over a plain
//! `TcpStream` (or, on a secure cluster's secured servers, TLS with the client certificate
//! after a login), always under a timeout (a paused or half-started server must not hang `up`).
//! What to send and how to read the reply is the system's ([`Exchange`], from
//! [`System::health_check`](lockbench_core::System::health_check) and the like); the socket,
//! the TLS and the timeout are here.

use anyhow::{Context, anyhow, bail};
use lockbench_core::{Exchange, System};
use rustls::pki_types::ServerName;
use secrecy::{ExposeSecret, SecretString};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one probe may take, connect included.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs one [`Exchange`]: connects to its address, sends its request, and reads until the
/// server closes the connection or the reply is complete, all within 2 s.
pub async fn exchange(ex: &Exchange) -> anyhow::Result<Vec<u8>> {
    let addr = ex.addr.as_str();
    let work = async {
        let mut stream = TcpStream::connect(addr).await?;
        talk(&mut stream, ex).await
    };
    bounded(addr, work).await
}

/// What a probe of a secure cluster's secured server needs: the TLS client set-up (the
/// project's CA, the client certificate) and the user to log in as ([`crate::secure::probe`]
/// reads it from a cluster's state directory; the chaos controller's probes use it too).
#[derive(Clone)]
pub struct SecureProbe {
    /// The TLS configuration (for this module's exchanges and a system's own probe,
    /// [`System::secure_ask`]).
    config: Arc<rustls::ClientConfig>,
    user: String,
    password: SecretString,
    admin_password: SecretString,
}

impl SecureProbe {
    /// From the profile's files (`crate::secure`).
    pub(crate) fn new(
        ca: &Path,
        cert: &Path,
        key: &Path,
        user: &str,
        password: SecretString,
        admin_password: SecretString,
    ) -> anyhow::Result<SecureProbe> {
        let tls = lockbench_core::Tls {
            ca: Some(ca.into()),
            cert: Some(cert.into()),
            key: Some(key.into()),
            server_name: None,
        };
        let config =
            lockbench_core::crypto::client_config("secure", &tls).map_err(|e| anyhow!(e))?;
        let config = Arc::new(config);
        Ok(SecureProbe {
            config,
            user: user.into(),
            password,
            admin_password,
        })
    }

    /// The same TLS set-up, logging in as the system's administrator `user` with the profile's
    /// administrator password: the chaos controller's login where a fault sends what
    /// lockbench's least-privilege user may not (Redis's scripts over every key, `REPLICAOF`).
    pub fn as_admin(&self, user: &str) -> SecureProbe {
        SecureProbe {
            user: user.into(),
            password: self.admin_password.clone(),
            ..self.clone()
        }
    }
}

/// Runs one [`Exchange`] with `system`'s server over TLS (verified against the address's host,
/// presenting the client certificate), after its [`System::login`] when it has one, within 2 s.
pub async fn secure_exchange(
    ex: &Exchange,
    probe: &SecureProbe,
    system: &dyn System,
) -> anyhow::Result<Vec<u8>> {
    let addr = ex.addr.as_str();
    if let Some(asked) = system.secure_ask(ex, probe.config.clone(), &probe.admin_password) {
        return bounded(addr, async { asked.await.map_err(|e| anyhow!(e)) }).await;
    }
    let work = async {
        let name = ServerName::try_from(lockbench_core::crypto::member_host(addr).to_string())?;
        let tcp = TcpStream::connect(addr).await?;
        let connector = tokio_rustls::TlsConnector::from(probe.config.clone());
        let mut stream = connector.connect(name, tcp).await?;
        let password = probe.password.expose_secret();
        if let Some(login) = system.login(addr, &probe.user, password) {
            let reply = talk(&mut stream, &login).await?;
            if !system.logged_in(&reply) {
                bail!("{} did not accept user {}", system.name(), probe.user);
            }
        }
        talk(&mut stream, ex).await
    };
    bounded(addr, work).await
}

/// Sends `ex`'s request on `stream` and reads until the server closes it or the reply is
/// complete.
async fn talk<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    ex: &Exchange,
) -> anyhow::Result<Vec<u8>> {
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
    Ok(reply)
}

/// `work` within [`PROBE_TIMEOUT`], its errors naming `addr`.
async fn bounded(
    addr: &str,
    work: impl Future<Output = anyhow::Result<Vec<u8>>>,
) -> anyhow::Result<Vec<u8>> {
    tokio::time::timeout(PROBE_TIMEOUT, work)
        .await
        .map_err(|_| anyhow!("{addr}: no reply within {PROBE_TIMEOUT:?}"))?
        .with_context(|| addr.to_string())
}
