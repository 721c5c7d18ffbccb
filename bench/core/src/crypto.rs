//! The process's TLS crypto provider, chosen once: ring.
//!
//! Why here: rustls 0.23 picks a process-wide default provider only when exactly one is compiled
//! in. The etcd client (tonic) and the Redis client (redis-rs) use ring; ZooKeeper's client
//! (`zookeeper-client`'s `tls` feature) turns on rustls's default features, which add aws-lc. A
//! binary that links both has two providers and no default, and every
//! `rustls::ClientConfig::builder()` (redis-rs's, zookeeper-client's, the managed cluster's TLS
//! probes) then panics. Each library path that is about to build a TLS configuration calls
//! [`install_ring`] first, so binaries and tests alike are covered without depending on what
//! `main` did; installing is idempotent and cheap after the first call.
//!
//! [`client_config`] is the one place a group's `tls` settings become lockbench's own rustls
//! configuration (etcd's `/metrics` and diagnosis, ZooKeeper's four-letter words, name check
//! and diagnosis), so every system reads the same files the same way and names them alike.

use crate::Tls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

/// Makes ring the process's default rustls crypto provider, unless one is already installed
/// (the first install wins; a later call changes nothing).
pub fn install_ring() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err: another provider was installed first; every one lockbench builds configs with
        // is ring, and one chosen by the embedding program is its choice to make.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A rustls client configuration (ring) for group `group`'s `tls` settings: trust the CA file
/// (the system's roots when there is none), present the client certificate when both `cert`
/// and `key` are set; no ALPN. Errors name the setting and its file, never a file's content.
pub fn client_config(group: &str, tls: &Tls) -> Result<rustls::ClientConfig, String> {
    let bad = |setting: &str, path: &Path, e: &dyn std::fmt::Display| {
        format!(
            "{group}.tls.{setting}: {} is not a usable PEM file: {e}",
            path.display()
        )
    };
    let read = |setting: &str, path: &Path| {
        std::fs::read(path).map_err(|e| {
            format!(
                "{group}.tls.{setting}: cannot read {}: {} (the cluster file's paths are \
                 relative to its directory)",
                path.display(),
                e.kind()
            )
        })
    };
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca {
        Some(ca) => {
            for cert in CertificateDer::pem_slice_iter(&read("ca", ca)?) {
                let cert = cert.map_err(|e| bad("ca", ca, &e))?;
                roots.add(cert).map_err(|e| bad("ca", ca, &e))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{group}.tls: {e}"))?
        .with_root_certificates(roots);
    match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(&read("cert", cert)?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad("cert", cert, &e))?;
            let key_der = PrivateKeyDer::from_pem_slice(&read("key", key)?)
                .map_err(|e| bad("key", key, &e))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| format!("{group}.tls.cert / {group}.tls.key: {e}"))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After it, a config builds from the process default, which is ring; twice is harmless.
    #[test]
    fn ring_is_the_default_after_install() {
        install_ring();
        install_ring();
        let provider = rustls::crypto::CryptoProvider::get_default().expect("a default provider");
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(
            format!("{:?}", provider.cipher_suites),
            format!("{:?}", ring.cipher_suites)
        );
        let _ = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
    }
}
