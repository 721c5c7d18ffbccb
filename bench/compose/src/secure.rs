//! The secure compose cluster: `compose/secure.yml` over docker-compose.yml starts
//! the same servers secured as `lockbench up --secure` secures the managed ones (mutual TLS,
//! lockbench's users: Redis ACLs with Redlock's five and the Sentinels, etcd's user and
//! authentication, ZooKeeper's digest user under its chroot).
//!
//! Why this shape:
//! - **The same launch code.** Each service's command is its system's
//!   [`launch`](lockbench_core::System::launch) with the [`Secure`] profile in its site (the
//!   files' paths those of the profile's directory inside the container, [`MOUNT`]), the code
//!   path `up --secure` takes; nothing is written a second time here.
//! - **No secret in the YAML, and the YAML committed.** The overlay is generated, committed and
//!   checked against the generator like docker-compose.yml, so it cannot hold anything made per
//!   cluster. A launch file that holds a password or its hash (Redis's ACL lines, the failover
//!   pair's `masterauth`, the Sentinels' `auth-pass`) is found by launching twice with two
//!   different passwords ([`secret_files`]): the command copies it from the profile's
//!   directory (`launch/<server>/<file>`, mode 0600, written by [`init`]) instead of writing it
//!   from the YAML's text; every other file stays in the YAML, word for word.
//! - **Files made before `up`, by lockbench.** [`init`] (`lockbench compose-secure-init`)
//!   makes the managed profile's files ([`lockbench_cluster::secure`]: the CA, the server
//!   certificate naming every container address, the compose services' and containers' names,
//!   the bridge's address and 127.0.0.1; the client certificate; the passwords) in
//!   `DIR/secure`, which the overlay mounts read-only at [`MOUNT`] (`DIR` is
//!   `$LOCKBENCH_COMPOSE_SECRETS`, by default [`DEFAULT_DIR`]).
//! - **`--cluster compose` finds the profile by itself.** Docker says which host directory the
//!   running containers mount at [`MOUNT`] ([`profile`]); a run then reaches the servers with
//!   the managed secure cluster's endpoints and connection settings
//!   ([`lockbench_cluster::secure::endpoints`]), sets lockbench's users up where a system does
//!   so after start (etcd, ZooKeeper's chroot; each keeps what exists), and its probes and
//!   faults speak TLS ([`crate::Containers`]' secure probe).

use crate::file::{self, container, quoted};
use anyhow::Context;
use lockbench_cluster::{SERVERS, ServerSpec, secure as managed};
use lockbench_core::Endpoints;
use lockbench_core::launch::{Launch, Secure};
use std::fmt::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The overlay, from the repository's top.
pub const OVERLAY: &str = "compose/secure.yml";
/// Where the profile's directory (`DIR/secure`) is inside every secured container.
pub const MOUNT: &str = "/lockbench-secure";
/// The variable naming the profile's host directory `DIR` in the overlay.
pub const DIR_ENV: &str = "LOCKBENCH_COMPOSE_SECRETS";
/// `DIR` when [`DIR_ENV`] is not set (relative to the compose project, the repository's top;
/// git-ignored).
pub const DEFAULT_DIR: &str = "compose/secrets";
/// The profile directory's sub-directory of the servers' secret launch files.
const LAUNCH: &str = "launch";

/// `true` when the profile secures `spec` (as on the managed secure cluster).
fn secured(spec: &ServerSpec) -> bool {
    managed::honoured(spec)
}

/// The profile as the containers see it: its files under [`MOUNT`].
fn in_container(password: &str, admin: &str) -> Secure {
    Secure::in_dir(
        Path::new(MOUNT),
        managed::USER,
        password.to_string().into(),
        admin.to_string().into(),
    )
}

/// `spec`'s launch with `secure` when the profile secures it, else plain.
fn launch(spec: &ServerSpec, secure: &Secure) -> Launch {
    file::launch_with(spec, secured(spec).then_some(secure))
}

/// The files of `spec`'s secure launch that hold a secret: those that differ between two
/// profiles with different passwords. Panics when a password would reach anything else (the
/// command line, which `docker inspect` and `ps` show).
pub fn secret_files(spec: &ServerSpec) -> Vec<PathBuf> {
    let a = launch(spec, &in_container("password-a", "admin-a"));
    let b = launch(spec, &in_container("password-b", "admin-b"));
    assert!(
        (a.program, &a.args, &a.dirs, &a.remove) == (b.program, &b.args, &b.dirs, &b.remove)
            && a.files.len() == b.files.len(),
        "{}: its secure launch puts a password outside its files",
        spec.name
    );
    a.files
        .iter()
        .zip(&b.files)
        .filter(|(x, y)| x.contents != y.contents)
        .map(|(x, _)| x.path.clone())
        .collect()
}

/// Where a secret launch file of `spec` is in the profile's directory (relative to it).
fn copied_from(spec: &ServerSpec, path: &Path) -> String {
    let name = path.file_name().expect("a launch file has a name");
    format!("{LAUNCH}/{}/{}", spec.name, name.to_string_lossy())
}

/// The names the server certificate carries besides the addresses: every service's name and
/// its container's.
fn cert_names() -> Vec<String> {
    SERVERS
        .iter()
        .flat_map(|s| [s.name.to_string(), container(s.name)])
        .collect()
}

/// Makes what is missing of the compose cluster's profile in `dir/secure` (certificates,
/// passwords, as [`lockbench_cluster::secure`] makes the managed one's) and writes every
/// secured server's secret launch files (mode 0600) from it. Run before `up` with the overlay;
/// again after a change of the servers' settings. Returns `dir/secure`.
pub fn init(dir: &Path) -> anyhow::Result<PathBuf> {
    managed::ensure_named(dir, &file::topology(), &cert_names())?;
    let host = managed::load(dir)?.with_context(|| {
        format!(
            "{}: the profile's password is missing after it was made",
            dir.display()
        )
    })?;
    let secure = Secure {
        password: host.password,
        admin_password: host.admin_password,
        ..in_container("", "")
    };
    let root = managed::dir(dir);
    for spec in SERVERS.iter().copied().filter(|s| secured(s)) {
        let secrets = secret_files(spec);
        for f in launch(spec, &secure).files {
            if !secrets.contains(&f.path) {
                continue;
            }
            let to = root.join(copied_from(spec, &f.path));
            let parent = to.parent().expect("under the profile's directory");
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
            managed::write_private(&to, &f.contents)?;
        }
    }
    Ok(root)
}

/// `compose/secure.yml`.
pub fn overlay() -> String {
    let mut out = format!(
        "\
# GENERATED by lockbench-compose (see docker-compose.yml); do not edit.
# The secure profile of `lockbench up --secure` on docker-compose.yml's servers:
# ZooKeeper, etcd, Redis, Redlock's five and the Sentinels speak only mutual TLS and admit only
# lockbench's users (docs/secure-clusters.md). Certificates and passwords are made first, into
# ${DIR_ENV} (default {DEFAULT_DIR}, git-ignored), whose `secure/`
# every secured container mounts read-only at {MOUNT}; nothing secret is in this file:
#   lockbench compose-secure-init      # or `lockbench compose-secure-init DIR`, then
#                                      # {DIR_ENV}=DIR for the two commands below
#   docker-compose -f docker-compose.yml -f {OVERLAY} up -d     # v2: docker compose ... --wait
#   lockbench run quick --cluster compose   # finds the profile, connects with TLS and the user
#   docker-compose -f docker-compose.yml -f {OVERLAY} down -v
# `down -v` between a plain and a secure `up`: a Sentinel keeps its config on the volume.
# A server's files that hold a password's hash or the administrator's password are copied
# from {MOUNT}/{LAUNCH}/<server>/ (written by compose-secure-init); the rest is here.
services:
"
    );
    let secure = in_container("", "");
    for spec in SERVERS.iter().copied().filter(|s| secured(s)) {
        let launch = launch(spec, &secure);
        let secrets = secret_files(spec);
        let _ = writeln!(out, "  {}:", spec.name);
        let _ = writeln!(
            out,
            "    volumes:\n      - \"${{{DIR_ENV}:-./{DEFAULT_DIR}}}/secure:{MOUNT}:ro\""
        );
        let port = file::topology().client_port(spec);
        let test: Vec<String> = spec
            .system
            .compose_secure_healthcheck(port, MOUNT, managed::USER)
            .iter()
            .map(|w| quoted(w))
            .collect();
        let _ = writeln!(out, "    healthcheck:\n      test: [{}]", test.join(", "));
        let copied = |f: &lockbench_core::launch::File| {
            secrets
                .contains(&f.path)
                .then(|| format!("{MOUNT}/{}", copied_from(spec, &f.path)))
        };
        let script = file::script_copying(&launch, &file::exec_line(&launch), copied);
        file::command(&mut out, &script);
    }
    out
}

/// The directory (`DIR`, holding `secure/`) of the profile the running compose cluster's
/// secured containers mount at [`MOUNT`]: `None` when they run plain (or do not run). Asked
/// of Docker once per process. Fails when they mount one this process cannot read (naming it
/// and how to fix that).
pub fn profile() -> anyhow::Result<Option<PathBuf>> {
    static PROFILE: OnceLock<Result<Option<PathBuf>, String>> = OnceLock::new();
    PROFILE
        .get_or_init(|| find_profile().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn find_profile() -> anyhow::Result<Option<PathBuf>> {
    let Some(first) = SERVERS.iter().find(|s| secured(s)) else {
        return Ok(None);
    };
    let format = format!(
        "{{{{range .Mounts}}}}{{{{if eq .Destination \"{MOUNT}\"}}}}{{{{.Source}}}}{{{{end}}}}{{{{end}}}}"
    );
    let Some(source) = crate::site::inspect(first.name, &format) else {
        return Ok(None);
    };
    let source = PathBuf::from(source.trim());
    if source.as_os_str().is_empty() {
        return Ok(None);
    }
    let dir = source.parent().unwrap_or(Path::new("/")).to_path_buf();
    if !managed::recorded(&dir) || managed::load(&dir).is_err() {
        anyhow::bail!(
            "the compose cluster runs secured ({OVERLAY}): container {} mounts {} at {MOUNT}, \
             but this process cannot read its password file there; run lockbench on the \
             Docker host as the user who ran `lockbench compose-secure-init` (root when it \
             was made by root)",
            container(first.name),
            source.display()
        );
    }
    Ok(Some(dir))
}

/// The compose cluster's endpoints the way this process reaches it ([`mod@crate::route`]), with
/// the secure profile's endpoints and connection settings when it runs secured.
pub fn endpoints() -> anyhow::Result<Endpoints> {
    let route = crate::route();
    let plain = route.endpoints();
    Ok(match profile()? {
        None => plain,
        Some(dir) => managed::endpoints(&dir, &route.topology(), &SERVERS, plain),
    })
}

/// What probes of the running compose cluster need: `None` when it runs plain.
pub fn probe() -> anyhow::Result<Option<lockbench_cluster::SecureProbe>> {
    match profile()? {
        None => Ok(None),
        Some(dir) => managed::probe(&dir),
    }
}

/// On a secured compose cluster, creates lockbench's users where a system does so after its
/// servers are up (etcd's user, role and authentication; ZooKeeper's chroot), as this process
/// reaches them; each system keeps what exists, so this runs before every run.
pub async fn set_up_users() -> anyhow::Result<()> {
    let Some(dir) = profile()? else {
        return Ok(());
    };
    let topo = crate::route().topology();
    managed::set_up_users(&dir, &topo, &SERVERS, |_| None).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The overlay holds no password or hash of one (its secret files are copied), secures
    /// every server the managed profile secures, and keeps its other files word for word.
    #[test]
    fn the_overlay_holds_no_secret_and_the_secured_settings() {
        let yml = overlay();
        for spec in SERVERS.iter().copied().filter(|s| secured(s)) {
            assert!(
                yml.contains(&format!("\n  {}:\n", spec.name)),
                "{}",
                spec.name
            );
        }
        assert!(!yml.contains("password-a") && !yml.contains("admin-a"));
        assert!(
            !yml.contains("masterauth") && !yml.contains("auth-pass"),
            "{yml}"
        );
        for needle in [
            "secureClientPort=2181",
            "cp /lockbench-secure/launch/redis/secure.conf",
            "cp /lockbench-secure/launch/sen1/sentinel.conf",
            "--client-cert-auth",
            "umask 077",
        ] {
            assert!(yml.contains(needle), "the overlay lacks {needle:?}");
        }
    }

    /// `init` writes the secret launch files (mode 0600) with the real password's hash, and a
    /// server certificate naming the services and the container addresses.
    #[test]
    fn init_writes_the_secret_files_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("lb-compose-secure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = init(&dir).unwrap();
        let conf = root.join("launch/redis/secure.conf");
        let mode = std::fs::metadata(&conf).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&conf).unwrap();
        assert!(
            text.contains("tls-cert-file /lockbench-secure/server.pem"),
            "{text}"
        );
        let password = std::fs::read_to_string(root.join("password")).unwrap();
        assert!(!text.contains(password.trim()));
        let hosts = std::fs::read_to_string(root.join("hosts")).unwrap();
        for name in [
            "10.78.0.11",
            "10.78.0.1",
            "zk1",
            "lockbench-redlock5",
            "127.0.0.1",
        ] {
            assert!(hosts.lines().any(|h| h == name), "{name} not in {hosts}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
