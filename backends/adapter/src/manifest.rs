//! An adapter's manifest: the small TOML file that makes a lock library a lockbench backend
//! without changing lockbench (`docs/adapter-protocol.md`).
//!
//! ```toml
//! library = "redis-py"            # what results call it (the backend is `lib:redis-py`)
//! system = "redis"                # whose endpoints it gets: an endpoints group
//! command = ["python3", "adapter.py"]  # run in the manifest's directory
//! lock_life = "10s"               # optional: the lock life it asks the library for
//!                                 # (LOCKBENCH_TTL_MS); by default the scenario's, as its
//!                                 # system's own recipes have it (redis.ttl, ...)
//! start_timeout = "5s"            # optional: how long it may take to say hello
//! build = ["sh", "build.sh"]      # optional: what `scripts/install-adapters` runs once
//! [env]                           # optional: more environment for the command
//! [observe]                       # optional: the library's locks, as the servers hold them,
//! recipe = "zk-curator"           # are laid out as this recipe's (its server-side observer
//! set = ["zookeeper.root=/lockbench-lib/{prefix}"]  # watches them), with these knobs
//! [counters]                      # optional: knobs for reading the servers' request counters
//! set = ["redis.counted=set,evalsha,script|load"]  # (the commands the library sends)
//! ```
//!
//! A backend name `lib:NAME` is the built-in manifest `adapters/NAME/adapter.toml` of this
//! repository; a name ending in `.toml` is a user's own manifest, by path.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The library's name, as results print it.
    pub library: String,
    /// The endpoints group whose addresses the adapter gets (`zookeeper`, `etcd`, `redis`,
    /// `redlock`, `postgres`).
    pub system: String,
    /// The program and its arguments, run in [`Manifest::dir`].
    pub command: Vec<String>,
    /// How long a dead client's lock lives (what the adapter asks the library for); `None`:
    /// the scenario's, as the system's own recipes have it (`redis.ttl`,
    /// `zookeeper.session_timeout`, ...), so the scenario's knobs shape the library too.
    #[serde(with = "humantime_serde", default)]
    pub lock_life: Option<Duration>,
    /// How long the adapter may take to say hello (a JVM on a loaded machine needs more than
    /// the default 5 s); a broken adapter is named after this.
    #[serde(with = "humantime_serde", default = "default_start")]
    pub start_timeout: Duration,
    /// Run once to build or install the adapter (`scripts/install-adapters`).
    #[serde(default)]
    pub build: Vec<String>,
    /// More environment for the command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How the servers' view of the library's locks can be read (server-side truth); `None`:
    /// it cannot, and an observed run says so.
    #[serde(default)]
    pub observe: Option<Observe>,
    /// How the servers' request counters are read: the system's own first recipe reads them,
    /// built with the scenario's knobs and these settings.
    #[serde(default)]
    pub counters: Counters,
    /// The manifest's directory (not in the file).
    #[serde(skip)]
    pub dir: PathBuf,
}

/// The library's locks, as the servers hold them, are laid out as one of lockbench's recipes
/// lays out its own: same key names, and holders named the same way (a ZooKeeper lock node's
/// sequence, a Redis value carrying the client's id). The server-side observer is then that
/// recipe's, built with the scenario's knobs and [`Observe::set`].
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observe {
    /// The recipe (`zk-curator`, `redis-setnx`, ...).
    pub recipe: String,
    /// Knob settings (`zookeeper.root=/lockbench-lib/{prefix}`); `{prefix}` is the key
    /// prefix the adapter gets (`LOCKBENCH_PREFIX`).
    #[serde(default)]
    pub set: Vec<String>,
}

/// The settings the servers' request counters are read with, for a library that sends other
/// requests than its system's own recipe: a Redis library's `SET`, which lockbench's recipe
/// only calls inside its scripts, so its counter leaves `SET` out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counters {
    /// Knob settings (`redis.counted=set,evalsha,script|load`).
    #[serde(default)]
    pub set: Vec<String>,
}

fn default_start() -> Duration {
    crate::process::PROMPT
}

/// Where the built-in manifests are: `$LOCKBENCH_ADAPTERS`, else this repository's `adapters/`.
pub fn builtin_dir() -> PathBuf {
    match std::env::var_os("LOCKBENCH_ADAPTERS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters"),
    }
}

/// `true` when `name` names an adapter (`lib:NAME` or a path ending in `.toml`) rather than
/// a recipe of a registered system.
pub fn is_adapter(name: &str) -> bool {
    name.starts_with("lib:") || name.ends_with(".toml")
}

/// `arg` with its placeholders filled: `{repo}` is this repository (the built-in manifests'
/// parent), `{lockbench}` the running lockbench binary (`$LOCKBENCH_EXE` overrides it).
pub fn expand(arg: &str) -> String {
    let mut out = arg.to_string();
    if out.contains("{repo}") {
        let dir = builtin_dir();
        let repo = dir.parent().map(Path::to_path_buf).unwrap_or(dir);
        let repo = repo.canonicalize().unwrap_or(repo);
        out = out.replace("{repo}", &repo.to_string_lossy());
    }
    if out.contains("{lockbench}") {
        let exe = match std::env::var_os("LOCKBENCH_EXE") {
            Some(e) => PathBuf::from(e),
            None => std::env::current_exe().unwrap_or_else(|_| PathBuf::from("lockbench")),
        };
        out = out.replace("{lockbench}", &exe.to_string_lossy());
    }
    out
}

/// The built-in adapters' names (`lib:NAME`), sorted.
pub fn builtin_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(builtin_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("adapter.toml").is_file())
        .map(|e| format!("lib:{}", e.file_name().to_string_lossy()))
        .collect();
    names.sort();
    names
}

/// The manifest file `name` stands for.
pub fn path_of(name: &str) -> PathBuf {
    match name.strip_prefix("lib:") {
        Some(lib) => builtin_dir().join(lib).join("adapter.toml"),
        None => PathBuf::from(name),
    }
}

/// Reads the manifest `name` stands for; the error names the file and, for a bad field, the
/// field.
pub fn load(name: &str) -> Result<Manifest, String> {
    let path = path_of(name);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let hint = if name.starts_with("lib:") {
            format!("the built-in adapters are: {}", builtin_names().join(", "))
        } else {
            "give the path of an adapter.toml (docs/adapter-protocol.md)".to_string()
        };
        format!(
            "adapter {name}: cannot read {}: {e}; {hint}",
            path.display()
        )
    })?;
    let mut m: Manifest = toml::from_str(&text).map_err(|e| {
        format!(
            "adapter {name}: {}: {}",
            path.display(),
            e.to_string().trim()
        )
    })?;
    if m.command.is_empty() || m.command[0].trim().is_empty() {
        return Err(format!(
            "adapter {name}: {}: `command` must name a program",
            path.display()
        ));
    }
    if m.lock_life.is_some_and(|l| l.is_zero()) {
        return Err(format!(
            "adapter {name}: {}: `lock_life` must be above zero",
            path.display()
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    m.dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir.to_path_buf()
    };
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_and_a_bad_one_names_its_file_and_field() {
        let dir = std::env::temp_dir().join(format!("lb-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("adapter.toml");
        std::fs::write(
            &good,
            "library = \"x\"\nsystem = \"redis\"\ncommand = [\"python3\", \"a.py\"]\n\
             lock_life = \"3s\"\n[env]\nA = \"1\"\n\
             [counters]\nset = [\"redis.counted=set,evalsha\"]\n",
        )
        .unwrap();
        let name = good.to_str().unwrap();
        assert!(is_adapter(name) && is_adapter("lib:redis-py") && !is_adapter("zk-fair"));
        let m = load(name).unwrap();
        assert_eq!(m.lock_life, Some(Duration::from_secs(3)));
        assert_eq!(
            m.counters.set,
            vec!["redis.counted=set,evalsha".to_string()]
        );
        assert_eq!(m.dir, dir);
        assert_eq!(m.env["A"], "1");
        std::fs::write(
            &good,
            "library = \"x\"\nsystem = \"redis\"\ncomand = [\"a\"]\n",
        )
        .unwrap();
        let err = load(name).unwrap_err();
        assert!(
            err.contains("comand") && err.contains("adapter.toml"),
            "{err}"
        );
        let err = load("lib:no-such-library").unwrap_err();
        assert!(
            err.contains("lib:no-such-library") && err.contains("built-in"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
