//! Where log lines go: the terminal tells the run's story, the run directory keeps the rest.
//!
//! lockbench's own log lines (targets `lockbench*`: its warnings and alarms) go to the
//! terminal, between the narrative's `lockbench:` lines. Its libraries' lines (a ZooKeeper
//! client reconnecting through every fault, etcd's gRPC stack, ...) would drown that story:
//! once a run has a directory, [`to_run_dir`] sends them to `lockbench.log` there, with a copy
//! of lockbench's own lines so the file reads in order, and worker processes write their
//! stderr there too ([`lockbench_workloads::worker_log`]). Before that (a cluster being
//! prepared) and in commands without a run directory (`up`, `compare`, ...), every line goes
//! to the terminal.
//!
//! Which lines are recorded at all is `LOCKBENCH_LOG`'s, else `RUST_LOG`'s (the usual
//! `EnvFilter` syntax: `RUST_LOG=zookeeper_client=debug`), else warnings and errors; `-q` and
//! `-v` set `LOCKBENCH_LOG` ([`crate::verbosity`]). Whatever the filter, the `TRACE` lines of a
//! client library a system names ([`System::secret_trace_targets`]: async-nats's `CONNECT`
//! holds the user's password) are never recorded ([`recordable`]). The terminal's lines are
//! coloured as `--color` and NO_COLOR say ([`crate::color`]); the file's never.
//!
//! [`System::secret_trace_targets`]: lockbench_core::System::secret_trace_targets

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tracing::Metadata;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::writer::OptionalWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The variable holding the log filter (read first, then `RUST_LOG`).
pub const FILTER_VAR: &str = "LOCKBENCH_LOG";

/// The log file's name in a run directory.
pub const FILE_NAME: &str = "lockbench.log";

/// The run's log file, once there is one.
static RUN_LOG: Mutex<Option<File>> = Mutex::new(None);

fn run_log() -> std::sync::MutexGuard<'static, Option<File>> {
    RUN_LOG.lock().unwrap_or_else(|e| e.into_inner())
}

/// A line of lockbench's own (any of its crates, or this binary).
fn is_ours(target: &str) -> bool {
    target.starts_with("lockbench")
}

/// `false` for lines that may hold a secret: `TRACE` lines of a target some system names.
fn recordable(target: &str, level: &tracing::Level) -> bool {
    *level != tracing::Level::TRACE
        || !lockbench_registry::system::SYSTEMS
            .iter()
            .flat_map(|s| s.secret_trace_targets())
            .any(|t| target.starts_with(t))
}

/// Installs the subscriber: every line on the terminal until [`to_run_dir`].
pub fn init() {
    let filter = [FILTER_VAR, "RUST_LOG"]
        .iter()
        .find_map(|var| tracing_subscriber::EnvFilter::try_from_env(var).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn"));
    let terminal = tracing_subscriber::fmt::layer()
        .with_writer(Terminal)
        .with_ansi(crate::color::stderr());
    let file = tracing_subscriber::fmt::layer()
        .with_writer(|| RunLog)
        .with_ansi(false);
    let secrets =
        tracing_subscriber::filter::filter_fn(|meta| recordable(meta.target(), meta.level()));
    tracing_subscriber::registry()
        .with(filter)
        .with(secrets)
        .with(terminal)
        .with(file)
        .init();
}

/// From now on, library lines go to `dir/lockbench.log` (created, or appended to), and so
/// does the stderr of worker processes started from now on. Returns the file's path.
pub fn to_run_dir(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(FILE_NAME);
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    lockbench_workloads::worker_log::send_to(file.try_clone()?);
    *run_log() = Some(file);
    Ok(path)
}

/// [`to_run_dir`], saying so on the terminal (a line among the run's first ones); a file that
/// cannot be made leaves every line on the terminal, and says that instead.
pub fn announce(dir: &Path) {
    match to_run_dir(dir) {
        Ok(path) => crate::say!(
            "library log lines (and worker processes' stderr) go to {}",
            path.display()
        ),
        Err(e) => eprintln!(
            "lockbench: cannot create {}: {e}; library log lines stay on the terminal",
            dir.join(FILE_NAME).display()
        ),
    }
}

/// The terminal's writer: lockbench's own lines always, the others while there is no log file.
struct Terminal;

impl<'a> MakeWriter<'a> for Terminal {
    type Writer = OptionalWriter<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        OptionalWriter::some(io::stderr())
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        if is_ours(meta.target()) || run_log().is_none() {
            OptionalWriter::some(io::stderr())
        } else {
            OptionalWriter::none()
        }
    }
}

/// The log file's writer: every line once the file is set, none before.
struct RunLog;

impl Write for RunLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match run_log().as_mut() {
            Some(file) => file.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match run_log().as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines_of_a_secret_bearing_library_are_never_recorded() {
        use tracing::Level;
        let secret = lockbench_registry::system::SYSTEMS
            .iter()
            .flat_map(|s| s.secret_trace_targets())
            .next()
            .expect("some system names one");
        let target = format!("{secret}::connection");
        assert!(!recordable(&target, &Level::TRACE));
        assert!(recordable(&target, &Level::DEBUG));
        assert!(recordable("lockbench_runner::engine", &Level::TRACE));
    }
}
