//! ZooKeeper over TLS: the group's `tls` settings as `zookeeper-client`'s options
//! and as lockbench's own rustls configuration, for what the client crate does not do.
//!
//! The crate (0.11, `tls` feature) speaks TLS to every member of a connect string given to
//! `secure_connect`, trusting a CA file and presenting a client certificate. Three things it
//! leaves to lockbench, which does them with its own handshake (ring, the same files):
//! - **the four-letter words** (`mntr` for the request counters, `srvr`): a secure client port
//!   (Netty) answers them only over TLS ([`four_letter_word`](crate::counters));
//! - **`tls.server_name`**: the crate checks a member's certificate against the host in the
//!   connect string and has no way to name another. With a server name set, the crate checks
//!   the chain only (no hostname verification) and lockbench checks the name itself: before an
//!   ensemble's first session each member's certificate is verified against the name
//!   ([`crate::diagnose::misconfigured`], run by `Ensemble::connect`), and a member whose
//!   certificate lacks it fails the connect;
//! - **why a connect failed**: the crate reports a refused handshake as a member it could not
//!   reach; the diagnosis speaks to each member itself and names the setting to fix.
//!
//! `tls = {}` (the system's roots) is refused: the crate trusts only a CA given as PEM.

use lockbench_core::Tls;
use lockbench_core::tls_failure::{Stage, timed_out};
use rustls::pki_types::ServerName;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use zookeeper_client as zk;

/// The group's TLS settings, ready for both clients.
#[derive(Clone)]
pub(crate) struct ZkTls {
    /// As the cluster file wrote them (paths for messages; never a secret).
    pub(crate) settings: Tls,
    /// For `zookeeper-client`'s sessions.
    pub(crate) options: zk::TlsOptions,
    /// For lockbench's own handshakes (four-letter words, the name check, the diagnosis).
    own: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for ZkTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkTls")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn read(setting: &str, path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| {
        format!(
            "zookeeper.tls.{setting}: cannot read {}: {} (the cluster file's paths are \
             relative to its directory)",
            path.display(),
            e.kind()
        )
    })
}

/// What `tls` must hold for lockbench's ZooKeeper clients, without reading its files: a CA
/// file, and a server name that is a name.
pub(crate) fn check(tls: &Tls) -> Result<(), String> {
    if tls.ca.is_none() {
        return Err(
            "zookeeper.tls.ca: required: lockbench's ZooKeeper client trusts only a CA \
                    file, not the system's roots; set it to the CA (PEM) that signed the \
                    members' certificates"
                .into(),
        );
    }
    if let Some(name) = &tls.server_name {
        ServerName::try_from(name.as_str()).map_err(|_| {
            format!("zookeeper.tls.server_name: `{name}` is not a DNS name or IP address")
        })?;
    }
    Ok(())
}

impl ZkTls {
    /// Reads the files of `tls`; errors name the setting and the file.
    pub(crate) fn new(tls: &Tls) -> Result<ZkTls, String> {
        check(tls)?;
        // The crate builds its rustls config from the process default provider.
        lockbench_core::crypto::install_ring();
        let ca_path = tls.ca.as_ref().expect("checked");
        let ca = read("ca", ca_path)?;
        let bad = |setting: &str, path: &Path, e: &dyn std::fmt::Display| {
            format!(
                "zookeeper.tls.{setting}: {} is not a usable PEM file: {e}",
                path.display()
            )
        };
        let mut options = zk::TlsOptions::new()
            .with_pem_ca(&ca)
            .map_err(|e| bad("ca", ca_path, &e))?;
        if let (Some(cert_path), Some(key_path)) = (&tls.cert, &tls.key) {
            options = options
                .with_pem_identity(&read("cert", cert_path)?, &read("key", key_path)?)
                .map_err(|e| bad("cert", cert_path, &e))?;
        }
        let own = lockbench_core::crypto::client_config("zookeeper", tls)?;
        if tls.server_name.is_some() {
            // SAFETY (of the session's TLS, not of memory): the crate would check the
            // certificate against the address's host; lockbench checks it against the server
            // name itself before the ensemble's first session (module docs).
            options = unsafe { options.with_no_hostname_verification() };
        }
        Ok(ZkTls {
            settings: tls.clone(),
            options,
            own: Arc::new(own),
        })
    }

    /// The name `member`'s certificate must carry: `tls.server_name`, else the address's host.
    fn server_name(&self, member: &str) -> ServerName<'static> {
        lockbench_core::crypto::server_name("zookeeper", &self.settings, member).unwrap_or_else(
            |_| {
                // An address the crate could not connect to either; fails the handshake.
                ServerName::try_from("invalid.invalid").expect("a DNS name")
            },
        )
    }

    /// A TLS connection to `member` (`host:port`), verified against its server name and
    /// presenting the client certificate; each stage within `budget`.
    pub(crate) async fn handshake(
        &self,
        member: &str,
        budget: Duration,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Stage> {
        let tcp = match tokio::time::timeout(budget, TcpStream::connect(member)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(Stage::Connect(e)),
            Err(_) => return Err(Stage::Connect(timed_out())),
        };
        let connector = tokio_rustls::TlsConnector::from(self.own.clone());
        match tokio::time::timeout(budget, connector.connect(self.server_name(member), tcp)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Stage::Handshake(e)),
            Err(_) => Err(Stage::Handshake(timed_out())),
        }
    }
}
