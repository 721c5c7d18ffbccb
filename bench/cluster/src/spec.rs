//! The managed cluster as data: one [`ServerSpec`] per server process.
//!
//! `up`, `down` and `status` iterate over [`SERVERS`], which is every registered system's
//! roster (each system's crate lists its servers, ports and host addresses: the
//! [`System`](lockbench_core::System) trait); what differs between systems (the command
//! line, the config files, the health check) is the system's too, asked through the trait. Ports are fixed because other crates' tests and the docs rely on
//! them.

use crate::state_dir::NodeDir;
use crate::topology::Topology;
use anyhow::Context;
use lockbench_core::ServerSpec;
use lockbench_core::launch::Site;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Every server of the managed cluster, in start order: the servers of every system
/// `lockbench-registry` lists ([`lockbench_registry::SYSTEMS`]), each system's in its own order.
pub static SERVERS: LazyLock<Vec<&'static ServerSpec>> =
    LazyLock::new(|| lockbench_registry::servers().collect());

/// The server called `name`.
pub fn by_name(name: &str) -> Option<&'static ServerSpec> {
    SERVERS.iter().copied().find(|s| s.name == name)
}

/// The program, arguments and environment that start one server.
pub(crate) struct Command {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Set on top of lockbench's own (the clock shim's, `crate::clock`).
    pub env: Vec<(String, PathBuf)>,
}

/// Writes the config files a server needs (its [`System::launch`](lockbench_core::System::launch)
/// in the managed cluster's node directory) and returns its command line.
pub(crate) fn prepare(
    spec: &ServerSpec,
    topo: &Topology,
    state_dir: &Path,
    node: &NodeDir,
    secure: Option<&lockbench_core::launch::Secure>,
) -> anyhow::Result<Command> {
    let site = Site {
        topology: topo,
        bind: topo.ip(spec),
        root: node.root.clone(),
        log: Some(node.log()),
        cluster_token: cluster_token(state_dir),
        secure,
    };
    let launch = spec.system.launch(spec, &site);
    for dir in &launch.dirs {
        std::fs::create_dir_all(dir)?;
    }
    for path in &launch.remove {
        let _ = std::fs::remove_file(path);
    }
    for f in &launch.files {
        if !(f.only_if_absent && f.path.exists()) {
            write_private(&f.path, &f.contents)?;
        }
    }
    let program = match launch.program {
        "java" => crate::install::java(),
        p => crate::install::which(p).unwrap_or_else(|| p.into()),
    };
    Ok(Command {
        program,
        args: launch.args.into_iter().map(Into::into).collect(),
        env: crate::clock::preload(state_dir, &node.clock())?.unwrap_or_default(),
    })
}

/// Writes a server's file readable by its owner only (mode 0600, an existing file too): on a
/// secure cluster some hold a password a server must send in clear (Redis's `masterauth`, a
/// Sentinel's `auth-pass`). The servers themselves start with umask 077 (`crate::process`), so
/// the files they rewrite (Sentinel's config, Redis's `CONFIG REWRITE`) stay so.
fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f.write_all(contents.as_bytes())?)
}

/// The managed cluster's token: derived from the state directory, so two state directories
/// never bootstrap into each other (etcd's `--initial-cluster-token`).
fn cluster_token(state_dir: &Path) -> String {
    format!(
        "lockbench-{:016x}",
        fnv1a(state_dir.as_os_str().as_encoded_bytes())
    )
}

/// 64-bit FNV-1a: a stable hash (unlike `DefaultHasher`) for the cluster token.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
