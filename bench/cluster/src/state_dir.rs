//! Where lockbench keeps its servers' data, configuration, logs and pid files.
//!
//! One directory per user (not per checkout), because the ports are fixed: there can only be
//! one managed cluster per machine, and every `lockbench` command must find it.

use std::path::{Path, PathBuf};

/// `$LOCKBENCH_STATE_DIR`, else `$XDG_STATE_HOME/lockbench`, else
/// `$HOME/.local/state/lockbench` (made absolute, so it can be recognised in a server's
/// command line).
pub fn default_state_dir() -> PathBuf {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = if let Some(dir) = env("LOCKBENCH_STATE_DIR") {
        dir
    } else if let Some(xdg) = env("XDG_STATE_HOME") {
        xdg.join("lockbench")
    } else if let Some(home) = env("HOME") {
        home.join(".local/state/lockbench")
    } else {
        let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
        std::env::temp_dir().join(format!("lockbench-{user}"))
    };
    absolute(&dir)
}

/// `path` made absolute against the current directory (without resolving symlinks, so it
/// reads the way the user wrote it).
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The files of one server: `<state>/cluster/<name>/{data,server.log,pid,...}`.
#[derive(Clone, Debug)]
pub(crate) struct NodeDir {
    /// `<state>/cluster/<name>`; every process of this server runs with it as its working
    /// directory, and it appears in the command line, which is how we recognise our processes.
    pub root: PathBuf,
}

impl NodeDir {
    pub fn new(state_dir: &Path, name: &str) -> NodeDir {
        NodeDir {
            root: state_dir.join("cluster").join(name),
        }
    }
    /// The server's data directory (wiped when its whole system starts from cold).
    pub fn data(&self) -> PathBuf {
        self.root.join("data")
    }
    /// Where the server's stdout, stderr and own log go.
    pub fn log(&self) -> PathBuf {
        self.root.join("server.log")
    }
    /// The shift of its wall clock and the count of reads shifted (`crate::clock`).
    pub fn clock(&self) -> PathBuf {
        self.root.join("clock")
    }
    /// The pid of the running server, written after a successful spawn.
    pub fn pid_file(&self) -> PathBuf {
        self.root.join("pid")
    }
}
