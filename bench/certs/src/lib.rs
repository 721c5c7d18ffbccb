//! The project's own certificate authority and the certificates a TLS cluster needs:
//! one CA, one server certificate every server presents, one client certificate every client
//! presents (mutual TLS), written as PEM files into a directory of the state directory.
//!
//! Why its own crate: the managed cluster (which starts servers with these files), the tests
//! that start a TLS server of their own, and nothing else need it; `rcgen` stays out of every
//! other crate's build. Why one server certificate for all servers: every server of a cluster
//! on one machine sits on the same few addresses (loopback, the `10.77.0.0/24` bridge), and the
//! certificate names all of them (`subject_alt_names`), as a wildcard certificate would in a
//! real deployment; a client still verifies that the server's chain ends at this CA and that
//! the address it dialled is named.
//!
//! The private keys are written with mode 0600 (owner read/write only), the directory with
//! 0700, and the CA's own key is never written: the files are made once, all together, and
//! made again (all of them) only when one is missing, so there is nothing to sign later with.
#![deny(missing_docs)]

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The files of one CA and its certificates, in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pki {
    /// The CA certificate (PEM): what clients and servers trust.
    pub ca: PathBuf,
    /// The servers' certificate (PEM).
    pub server_cert: PathBuf,
    /// The servers' private key (PEM, mode 0600).
    pub server_key: PathBuf,
    /// The clients' certificate (PEM), for mutual TLS.
    pub client_cert: PathBuf,
    /// The clients' private key (PEM, mode 0600).
    pub client_key: PathBuf,
}

/// A client certificate and its key (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCert {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (mode 0600).
    pub key: PathBuf,
}

impl Pki {
    /// Where the files are (or go) in `dir`.
    pub fn in_dir(dir: &Path) -> Pki {
        Pki {
            ca: dir.join("ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
        }
    }

    /// [`Pki::ensure`], plus a client certificate of the same CA that expired long ago
    /// (`client-expired.pem`, `.key`): what a test of a refused client certificate presents.
    /// All the files are made together (the CA's key is never kept), again when one is
    /// missing.
    pub fn ensure_with_expired_client(
        dir: &Path,
        hosts: &[&str],
    ) -> Result<(Pki, ClientCert), String> {
        let pki = Pki::in_dir(dir);
        let expired = ClientCert {
            cert: dir.join("client-expired.pem"),
            key: dir.join("client-expired.key"),
        };
        if pki.all().iter().all(|p| p.exists()) && expired.cert.exists() && expired.key.exists() {
            return Ok((pki, expired));
        }
        let _ = std::fs::remove_file(&pki.ca);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        pki.make(hosts, Some(&expired))
            .map_err(|e| format!("cannot make the certificates in {}: {e}", dir.display()))?;
        Ok((pki, expired))
    }

    fn all(&self) -> [&Path; 5] {
        [
            &self.ca,
            &self.server_cert,
            &self.server_key,
            &self.client_cert,
            &self.client_key,
        ]
    }

    /// The files in `dir`, made (all of them, with a new CA) when one is missing. The server
    /// certificate names `hosts` (IP addresses or DNS names) and `localhost`.
    pub fn ensure(dir: &Path, hosts: &[&str]) -> Result<Pki, String> {
        let pki = Pki::in_dir(dir);
        if pki.all().iter().all(|p| p.exists()) {
            return Ok(pki);
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        pki.make(hosts, None)
            .map_err(|e| format!("cannot make the certificates in {}: {e}", dir.display()))?;
        Ok(pki)
    }

    fn make(
        &self,
        hosts: &[&str],
        expired: Option<&ClientCert>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        // A name of its own: two of these CAs are two issuers, as two real CAs are (a client
        // given the other one's file then reads "unknown issuer", not a bad signature).
        let made = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        ca.distinguished_name.push(
            DnType::CommonName,
            format!("lockbench CA {made:x}-{}", std::process::id()),
        );
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;

        let leaf_valid = |name: &str,
                          sans: Vec<String>,
                          usage: ExtendedKeyUsagePurpose,
                          valid: Option<(i32, i32)>| {
            let mut p = CertificateParams::new(sans)?;
            if let Some((from, to)) = valid {
                p.not_before = rcgen::date_time_ymd(from, 1, 1);
                p.not_after = rcgen::date_time_ymd(to, 1, 1);
            }
            p.distinguished_name.push(DnType::CommonName, name);
            p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            // A server's certificate is its client certificate too where servers connect to each
            // other (etcd's members; etcd's HTTP gateway to its own gRPC port).
            p.extended_key_usages = match usage {
                ExtendedKeyUsagePurpose::ServerAuth => {
                    vec![usage, ExtendedKeyUsagePurpose::ClientAuth]
                }
                _ => vec![usage],
            };
            let key = KeyPair::generate()?;
            let cert = p.signed_by(&key, &ca_cert, &ca_key)?;
            Ok::<_, rcgen::Error>((cert.pem(), key.serialize_pem()))
        };
        let leaf = |name: &str, sans: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            leaf_valid(name, sans, usage, None)
        };
        let mut names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        names.push("localhost".into());
        names.dedup();
        let (server, server_key) = leaf(
            "lockbench server",
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let (client, client_key) = leaf(
            "lockbench",
            vec!["lockbench".into()],
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        if let Some(expired) = expired {
            let (cert, key) = leaf_valid(
                "lockbench",
                vec!["lockbench".into()],
                ExtendedKeyUsagePurpose::ClientAuth,
                Some((2000, 2001)),
            )?;
            write(&expired.key, &key, 0o600)?;
            write(&expired.cert, &cert, 0o644)?;
        }
        write(&self.server_key, &server_key, 0o600)?;
        write(&self.client_key, &client_key, 0o600)?;
        write(&self.server_cert, &server, 0o644)?;
        write(&self.client_cert, &client, 0o644)?;
        // Last: its presence says the set is whole.
        write(&self.ca, &ca_cert.pem(), 0o644)?;
        Ok(())
    }
}

/// Writes `text` to `path`, created with `mode` (a key is never readable by others, not even
/// for a moment).
fn write(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_are_private_and_a_whole_set_is_kept() {
        let dir = std::env::temp_dir().join(format!("lb-certs-{}", std::process::id()));
        let pki = Pki::ensure(&dir, &["127.0.0.1", "10.77.0.30"]).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&pki.server_key), 0o600);
        assert_eq!(mode(&pki.client_key), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert!(
            std::fs::read_to_string(&pki.ca)
                .unwrap()
                .contains("BEGIN CERTIFICATE")
        );
        let ca = std::fs::read(&pki.ca).unwrap();
        // A second call keeps the set; a missing file makes a new one (a new CA).
        Pki::ensure(&dir, &["127.0.0.1"]).unwrap();
        assert_eq!(std::fs::read(&pki.ca).unwrap(), ca);
        std::fs::remove_file(&pki.client_key).unwrap();
        Pki::ensure(&dir, &["127.0.0.1"]).unwrap();
        assert_ne!(std::fs::read(&pki.ca).unwrap(), ca);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
