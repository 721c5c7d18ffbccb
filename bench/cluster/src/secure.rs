//! The secure profile of the managed cluster (`lockbench up --secure`): the files it
//! lives on, and what clients and probes need to reach its servers.
//!
//! Why files and no flag in memory: like the topology, security is a property of what runs, and
//! every later `lockbench` command (a `run`, `status`, a fault restarting a server) must find
//! it. So `<state>/secure/` holds everything, and its `password` file is the record that the
//! cluster is secure:
//!
//! - `ca.pem`, `server.pem`, `server.key`, `client.pem`, `client.key`: made by
//!   [`lockbench_certs::Pki`] (directory 0700, keys 0600, the CA's key never written). One
//!   server certificate names every server address, the bridge's address and 127.0.0.1: a run
//!   with link faults dials its servers through proxies on the bridge (or loopback), and the
//!   client verifies the certificate against the address it dialled. `hosts` lists the names
//!   the certificate carries, so a topology change makes a new set. `server-keystore.pem` is
//!   the server's key and certificate in one file (mode 0600), ZooKeeper's `PEM` key store.
//! - `password`: lockbench's user's password, 32 random bytes in hex, made once per cluster
//!   (mode 0600); `admin-password` likewise, for a system whose users need an administrator
//!   (etcd's `root`), which no client uses. The user's password reaches clients only as a
//!   `password_file` in the endpoints, and servers only as a hash (Redis's `#<sha256>`), so
//!   it is in no log, result, command line or config. The administrator's is in clear only
//!   where a server must send it (the Redis failover pair's `masterauth`, the Sentinels'
//!   `auth-pass`), in files of mode 0600 (`lockbench_redis::secure::failover_config`).
//!
//! Which servers honour the profile is each system's and its client's ([`connection_for`]); the
//! groups whose servers all do get those connection settings in the cluster's endpoints, so
//! `lockbench run` connects with TLS and the user without being told.

use crate::topology::Topology;
use anyhow::Context;
use lockbench_core::launch::Secure;
use lockbench_core::{Connection, ServerSpec, Tls};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The user lockbench's clients log in as.
pub const USER: &str = "lockbench";

/// `<state>/secure`.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("secure")
}

fn password_file(state_dir: &Path) -> PathBuf {
    dir(state_dir).join("password")
}

/// The administrator's password (etcd's `root`), made like lockbench's user's.
fn admin_password_file(state_dir: &Path) -> PathBuf {
    dir(state_dir).join("admin-password")
}

/// `true` when the cluster of `state_dir` is (to be) secure: its password exists.
pub fn recorded(state_dir: &Path) -> bool {
    password_file(state_dir).exists()
}

/// The names the server certificate must carry in `topo`: every server's address, the bridge's
/// (the link proxies' side), 127.0.0.1.
fn cert_hosts(topo: &Topology) -> Vec<String> {
    let mut hosts: Vec<String> = crate::SERVERS
        .iter()
        .map(|s| topo.ip(s).to_string())
        .collect();
    hosts.extend(topo.net().map(|c| c.bridge_addr().to_string()));
    hosts.push("127.0.0.1".into());
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Makes what is missing of the profile for `topo`: the certificates (a new set when the
/// addresses they must name changed) and the password.
pub(crate) fn ensure(state_dir: &Path, topo: &Topology) -> anyhow::Result<()> {
    ensure_naming(state_dir, cert_hosts(topo), &[])
}

/// What `up --secure` makes, for the compose cluster's profile, whose files live in
/// `dir/secure` as a managed cluster's live in its state directory: the server certificate
/// names `topo`'s addresses and `names` too (the compose services' and containers' names).
pub fn ensure_named(dir: &Path, topo: &Topology, names: &[String]) -> anyhow::Result<()> {
    ensure_naming(dir, cert_hosts(topo), names)
}

fn ensure_naming(state_dir: &Path, mut hosts: Vec<String>, names: &[String]) -> anyhow::Result<()> {
    hosts.extend(names.iter().cloned());
    let dir = dir(state_dir);
    let hosts_file = dir.join("hosts");
    let listed = hosts.join("\n");
    let keystore = Secure::in_dir(&dir, USER, "".into(), "".into()).keystore;
    if std::fs::read_to_string(&hosts_file).ok().as_deref() != Some(listed.as_str()) {
        let pki = lockbench_certs::Pki::in_dir(&dir);
        for f in [&pki.ca, &pki.client_key, &keystore] {
            let _ = std::fs::remove_file(f);
        }
    }
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let pki = lockbench_certs::Pki::ensure(&dir, &names).map_err(anyhow::Error::msg)?;
    if !keystore.exists() {
        let mut text = std::fs::read_to_string(&pki.server_key)?;
        text.push_str(&std::fs::read_to_string(&pki.server_cert)?);
        write_private(&keystore, &text)?;
    }
    std::fs::write(&hosts_file, &listed)
        .with_context(|| format!("cannot write {}", hosts_file.display()))?;
    // The admin's first: the user's password is the record that the profile is whole.
    for pw in [admin_password_file(state_dir), password_file(state_dir)] {
        if !pw.exists() {
            let bytes: [u8; 32] = rand::random();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            write_private(&pw, &format!("{hex}\n"))?;
        }
    }
    Ok(())
}

/// Writes `text` to a new file at `path` that only its owner reads (mode 0600 from the start).
pub fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    Ok(f.write_all(text.as_bytes())?)
}

/// Forgets the profile (`down`): the next `up` is plain unless asked for `--secure`.
pub(crate) fn forget(state_dir: &Path) {
    let _ = std::fs::remove_dir_all(dir(state_dir));
}

/// What a secure cluster's servers are launched with; `None` when the cluster is plain.
pub fn load(state_dir: &Path) -> anyhow::Result<Option<Secure>> {
    if !recorded(state_dir) {
        return Ok(None);
    }
    let read = |pw: PathBuf| {
        let text = std::fs::read_to_string(&pw)
            .with_context(|| format!("cannot read {}", pw.display()))?;
        anyhow::Ok(text.trim().to_string().into())
    };
    let password = read(password_file(state_dir))?;
    let admin = read(admin_password_file(state_dir))?;
    Ok(Some(Secure::in_dir(&dir(state_dir), USER, password, admin)))
}

/// What probes of the cluster of `state_dir` need (`up`'s health checks, the chaos controller's
/// leader and TTL probes): `None` when it is plain.
pub fn probe(state_dir: &Path) -> anyhow::Result<Option<crate::net::SecureProbe>> {
    let Some(secure) = load(state_dir)? else {
        return Ok(None);
    };
    let pki = lockbench_certs::Pki::in_dir(&dir(state_dir));
    crate::net::SecureProbe::new(
        &pki.ca,
        &pki.client_cert,
        &pki.client_key,
        &secure.user,
        secure.password,
        secure.admin_password,
    )
    .map(Some)
}

/// How clients connect to a secure cluster's secured groups: mutual TLS with the project's CA
/// and client certificate, as [`USER`] with the password file.
pub fn connection(state_dir: &Path) -> Connection {
    let pki = lockbench_certs::Pki::in_dir(&dir(state_dir));
    Connection {
        tls: Some(Tls {
            ca: Some(pki.ca),
            cert: Some(pki.client_cert),
            key: Some(pki.client_key),
            server_name: None,
        }),
        user: Some(USER.into()),
        password_file: Some(password_file(state_dir)),
        ..Connection::default()
    }
}

/// The settings clients of `spec`'s group use on the secure cluster of `state_dir`: mutual TLS,
/// and the user where the system admits only it ([`System::secure_user`](lockbench_core::System::secure_user)); `None` when `spec`
/// stays plain on a secure cluster. A server is secured when its system can launch it so
/// ([`System::secured`](lockbench_core::System::secured)) *and* lockbench's client for it takes these settings (its
/// [`System::check_connection`](lockbench_core::System::check_connection) accepts them): a secured server its own backends could not
/// reach would only fail their runs. So the profile grows by itself as clients learn TLS.
pub fn connection_for(state_dir: &Path, spec: &ServerSpec) -> Option<Connection> {
    if !spec.system.secured(spec) {
        return None;
    }
    let mut c = connection(state_dir);
    if !spec.system.secure_user() {
        c.user = None;
        c.password_file = None;
    }
    for (setting, value) in spec.system.secure_settings() {
        c.system.insert(setting.to_string(), value.to_string());
    }
    let group = spec.group.list();
    spec.system.check_connection(group, &c).ok().map(|()| c)
}

/// `endpoints` (of `servers` in `topo`) with the secure profile of `state_dir` on every group
/// whose servers all honour it: their secure endpoints ([`System::secure_endpoint`](lockbench_core::System::secure_endpoint)) and
/// [`connection_for`]'s settings. The managed secure cluster's and the compose one's.
pub fn endpoints(
    state_dir: &Path,
    topo: &Topology,
    servers: &[&ServerSpec],
    mut endpoints: lockbench_core::Endpoints,
) -> lockbench_core::Endpoints {
    for g in lockbench_registry::listed_groups() {
        let members: Vec<&ServerSpec> = servers.iter().copied().filter(|s| s.group == g).collect();
        let settings: Vec<_> = members
            .iter()
            .map(|s| connection_for(state_dir, s))
            .collect();
        if let [Some(first), ..] = settings.as_slice()
            && settings.iter().all(|c| c.as_ref() == Some(first))
        {
            let addrs = members
                .iter()
                .map(|s| s.system.secure_endpoint(topo.client_addr(s)));
            endpoints.set(g.name(), addrs.collect());
            endpoints.set_connection(g.name(), first.clone());
        }
    }
    endpoints
}

/// How long creating lockbench's user on a secure cluster's group may take.
const USERS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Creates lockbench's user where a system does so after its servers are up
/// ([`System::set_up_users`](lockbench_core::System::set_up_users): etcd's users and roles,
/// ZooKeeper's chroot), for every group of `servers` the profile of `state_dir` secures, as
/// `topo` reaches them. `done(first member)` names a marker file that says a group was set up
/// already (skipped; written after), or `None` to set it up every time (each system's set-up
/// keeps what exists).
pub async fn set_up_users(
    state_dir: &Path,
    topo: &Topology,
    servers: &[&ServerSpec],
    done: impl Fn(&ServerSpec) -> Option<PathBuf>,
) -> anyhow::Result<()> {
    let Some(profile) = load(state_dir)? else {
        return Ok(());
    };
    for g in lockbench_registry::listed_groups() {
        let members: Vec<&ServerSpec> = servers.iter().copied().filter(|s| s.group == g).collect();
        let Some(first) = members.first() else {
            continue;
        };
        let Some(conn) = connection_for(state_dir, first) else {
            continue;
        };
        let client = Connection {
            tls: conn.tls,
            ..Default::default()
        };
        let urls: Vec<String> = members
            .iter()
            .map(|s| s.system.secure_endpoint(topo.client_addr(s)))
            .collect();
        let marker = done(first);
        if marker.as_ref().is_some_and(|m| m.exists()) {
            continue;
        }
        let Some(set_up) = first.system.set_up_users(&urls, &client, &profile) else {
            continue;
        };
        match tokio::time::timeout(USERS_TIMEOUT, set_up).await {
            Ok(Ok(())) => {
                tracing::info!(group = g.name(), user = USER, "user set up");
                if let Some(marker) = marker {
                    std::fs::write(&marker, "")?;
                }
            }
            Ok(Err(e)) => anyhow::bail!("{}: cannot set up user {USER}: {e}", g.name()),
            Err(_) => anyhow::bail!(
                "{}: setting up user {USER} took over {USERS_TIMEOUT:?}; see the servers' logs",
                g.name()
            ),
        }
    }
    Ok(())
}

/// `true` when `spec` is secured on a secure cluster ([`connection_for`]; the settings' shape
/// does not depend on the state directory): its probes speak TLS.
pub fn honoured(spec: &ServerSpec) -> bool {
    connection_for(Path::new("/"), spec).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The profile's files: a password only its owner reads, certificates naming the servers'
    /// addresses, kept across calls; a new topology makes new certificates, not a new password.
    #[test]
    fn the_profile_is_private_and_kept() {
        let state = std::env::temp_dir().join(format!("lb-secure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        assert!(!recorded(&state));
        ensure(&state, &Topology::Loopback).unwrap();
        assert!(recorded(&state));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&password_file(&state)), 0o600);
        assert_eq!(mode(&dir(&state)), 0o700);
        let secure = load(&state).unwrap().unwrap();
        assert_eq!(mode(&secure.key), 0o600);
        assert_eq!(mode(&secure.keystore), 0o600);
        let keystore = std::fs::read_to_string(&secure.keystore).unwrap();
        assert!(keystore.contains("PRIVATE KEY") && keystore.contains("CERTIFICATE"));
        let pw = std::fs::read_to_string(password_file(&state)).unwrap();
        assert_eq!(pw.trim().len(), 64);
        let ca = std::fs::read(&secure.ca).unwrap();
        ensure(&state, &Topology::Loopback).unwrap();
        assert_eq!(std::fs::read(&secure.ca).unwrap(), ca);
        let netns = Topology::Netns(crate::NetConfig::default());
        ensure(&state, &netns).unwrap();
        assert_ne!(std::fs::read(&secure.ca).unwrap(), ca);
        assert_eq!(std::fs::read_to_string(password_file(&state)).unwrap(), pw);
        let hosts = std::fs::read_to_string(dir(&state).join("hosts")).unwrap();
        assert!(hosts.contains("10.77.0.30") && hosts.contains("10.77.0.1"));
        forget(&state);
        assert!(!recorded(&state));
        let _ = std::fs::remove_dir_all(&state);
    }

    /// Every Redis server (the failover pair's too), the Sentinels, etcd, ZooKeeper and NATS
    /// are secured with mutual TLS and the user (ZooKeeper's under its chroot).
    #[test]
    fn which_servers_the_profile_secures() {
        let state = Path::new("/state");
        let of = |name: &str| connection_for(state, crate::by_name(name).unwrap());
        for name in [
            "redis", "redlock3", "fo1", "fo2", "sen2", "etcd1", "zk1", "nats2",
        ] {
            let c = of(name).unwrap();
            assert!(c.tls.as_ref().is_some_and(|t| t.mutual()), "{name}");
            assert_eq!(c.user.as_deref(), Some(USER), "{name}");
            assert_eq!(c.password_file, Some(state.join("secure/password")));
            let chroot = c.system.get("chroot").map(String::as_str);
            let want = if name == "zk1" {
                Some("/lockbench-secure")
            } else {
                None
            };
            assert_eq!(chroot, want, "{name}");
        }
    }
}
