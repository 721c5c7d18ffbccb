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
