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

/// The host of a member as a cluster file writes it, `host:port` or `scheme://host:port/`
/// (an IPv6 address without its brackets).
pub fn member_host(member: &str) -> &str {
    let rest = member.split_once("://").map_or(member, |(_, r)| r);
    let hp = rest.trim_end_matches('/');
    let host = hp.rsplit_once(':').map_or(hp, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The name `member`'s certificate must carry: group `group`'s `tls.server_name`, else the
/// member's host ([`member_host`]). An error names the setting (or the member) that is no DNS
/// name or IP address.
pub fn server_name(
    group: &str,
    tls: &Tls,
    member: &str,
) -> Result<rustls::pki_types::ServerName<'static>, String> {
    let (name, setting) = match &tls.server_name {
        Some(name) => (name.clone(), format!("{group}.tls.server_name")),
        None => (
            member_host(member).to_string(),
            format!("{group}.endpoints"),
        ),
    };
    rustls::pki_types::ServerName::try_from(name.clone())
        .map_err(|_| format!("{setting}: `{name}` is not a DNS name or IP address"))
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

    /// The server name: the setting when given, else the member's host however written;
    /// what is no name is refused naming where it came from.
    #[test]
    fn the_server_name_is_the_setting_else_the_member_s_host() {
        let none = Tls::default();
        let name = |tls: &Tls, m: &str| server_name("etcd", tls, m).map(|n| n.to_str().to_string());
        assert_eq!(name(&none, "10.77.0.21:2379").unwrap(), "10.77.0.21");
        assert_eq!(
            name(&none, "https://etcd1.example:2379/").unwrap(),
            "etcd1.example"
        );
        assert_eq!(name(&none, "[::1]:2181").unwrap(), "::1");
        let named = Tls {
            server_name: Some("etcd.internal".into()),
            ..Tls::default()
        };
        assert_eq!(name(&named, "10.77.0.21:2379").unwrap(), "etcd.internal");
        let bad = Tls {
            server_name: Some("not a name".into()),
            ..Tls::default()
        };
        let e = name(&bad, "10.77.0.21:2379").unwrap_err();
        assert!(e.starts_with("etcd.tls.server_name: `not a name`"), "{e}");
        let e = name(&none, "bad host:1").unwrap_err();
        assert!(e.starts_with("etcd.endpoints: `bad host`"), "{e}");
    }
}
