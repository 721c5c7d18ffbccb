//! How lockbench's etcd clients reach the members: their URLs and the group's connection
//! settings from the cluster file, turned into `etcd-client`'s options (TLS through
//! tonic's rustls, `ring` provider; a user and password) and into a rustls configuration of the
//! same trust for what lockbench speaks itself (`/metrics`, the diagnosis in
//! [`crate::diagnose`]).
//!
//! Why the settings are kept, not the options: the password is read from its source only when a
//! client connects ([`Access::options`]) and handed straight to `etcd-client`, so no value that
//! lives as long as a backend (and may be printed with `{:?}`) holds it.
//!
//! Without `user`, a client that presents a certificate to a member started with
//! `--client-cert-auth` is the user its certificate's common name names (etcd's own rule), so
//! mutual TLS alone authenticates too.

use lockbench_core::traits::BackendError;
use lockbench_core::{Connection, Endpoints, Tls};
use secrecy::ExposeSecret;
use std::sync::Arc;

/// The etcd group's members and how to connect to them.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    /// Member URLs, with the scheme the settings ask for (`https://` with TLS).
    pub(crate) urls: Vec<String>,
    /// The group's settings (paths and the password's source, never the password).
    pub(crate) connection: Connection,
}

/// The `host:port` of a member URL.
pub(crate) fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.trim_end_matches('/')
}

impl Access {
    /// The members of `endpoints.etcd` with the group's settings. A URL's scheme must agree
    /// with them: `http://` becomes `https://` under `tls`, an `https://` URL without `tls` is
    /// an error naming the setting.
    pub(crate) fn new(endpoints: &Endpoints) -> Result<Access, BackendError> {
        let connection = endpoints.connection(crate::GROUP).clone();
        let tls = connection.tls.is_some();
        let mut urls = Vec::new();
        for url in endpoints.get(crate::GROUP) {
            let hostport = host_port(url);
            if !tls && url.starts_with("https://") {
                return Err(BackendError::Config(format!(
                    "etcd.endpoints: `{url}` is an https:// URL but the group has no `tls` \
                     settings: add `tls = {{ ca = \"...\" }}` to [etcd] (with `cert` and `key` \
                     if the members ask for a client certificate), or write http://"
                )));
            }
            urls.push(format!(
                "{}://{hostport}",
                if tls { "https" } else { "http" }
            ));
        }
        Ok(Access { urls, connection })
    }

    /// The TLS settings, when the members speak TLS.
    pub(crate) fn tls(&self) -> Option<&Tls> {
        self.connection.tls.as_ref()
    }

    /// The user the clients authenticate as with a password (`None`: no password; with a
    /// client certificate the server takes its common name as the user).
    pub(crate) fn user(&self) -> Option<&str> {
        self.connection.user.as_deref()
    }

    /// `etcd-client`'s options for these settings: TLS files read, the password read from its
    /// source. Errors name the setting and the file, never the password.
    pub(crate) fn options(&self) -> Result<etcd_client::ConnectOptions, BackendError> {
        let mut options = etcd_client::ConnectOptions::new();
        if let Some(tls) = self.tls() {
            let mut t = etcd_client::TlsOptions::new();
            match &tls.ca {
                Some(ca) => {
                    t = t.ca_certificate(etcd_client::Certificate::from_pem(read("ca", ca)?))
                }
                None => t = t.with_native_roots(),
            }
            if let (Some(cert), Some(key)) = (&tls.cert, &tls.key) {
                t = t.identity(etcd_client::Identity::from_pem(
                    read("cert", cert)?,
                    read("key", key)?,
                ));
            }
            if let Some(name) = &tls.server_name {
                t = t.domain_name(name.clone());
            }
            options = options.with_tls(t);
        }
        let credentials = self
            .connection
            .credentials(crate::GROUP)
            .map_err(BackendError::Config)?;
        if let Some((user, password)) = credentials {
            // A member that restarted has forgotten the tokens it issued (etcd's simple tokens
            // live in memory): authenticate again rather than fail every request it serves.
            options = options
                .with_user(user, password.expose_secret())
                .with_auto_token_refresh(true);
        }
        Ok(options)
    }

    /// A rustls configuration with the same trust and client certificate as [`Self::options`]
    /// (for `/metrics` and the diagnosis), without ALPN: the members then answer HTTP/1.
    pub(crate) fn rustls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let tls = self.tls().cloned().unwrap_or_default();
        lockbench_core::crypto::client_config(crate::GROUP, &tls).map(Arc::new)
    }

    /// The name a member's certificate must carry: `tls.server_name`, else the URL's host.
    pub(crate) fn server_name(
        &self,
        url: &str,
    ) -> Result<rustls::pki_types::ServerName<'static>, String> {
        let tls = self.tls().cloned().unwrap_or_default();
        lockbench_core::crypto::server_name(crate::GROUP, &tls, url)
    }
}

/// Reads the file of setting `etcd.tls.{setting}`.
fn read(setting: &str, path: &std::path::Path) -> Result<Vec<u8>, BackendError> {
    std::fs::read(path).map_err(|e| {
        BackendError::Config(format!(
            "etcd.tls.{setting}: cannot read {}: {} (the cluster file's paths are relative to \
             its own directory)",
            path.display(),
            e.kind()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_follows_the_settings() {
        let text = "[etcd]\nendpoints = [\"http://a:1\", \"b:2\"]\ntls = {}\n";
        let e = Endpoints::from_toml(text).unwrap();
        assert_eq!(
            Access::new(&e).unwrap().urls,
            ["https://a:1", "https://b:2"]
        );
        let plain = Endpoints::from_iter([("etcd", vec!["https://a:1".to_string()])]);
        let err = Access::new(&plain).unwrap_err().to_string();
        assert!(
            err.contains("etcd.endpoints") && err.contains("tls"),
            "{err}"
        );
        assert_eq!(host_port("http://127.0.0.1:2379/"), "127.0.0.1:2379");
    }
}
