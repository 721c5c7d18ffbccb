//! Where worker processes' stderr goes.
//!
//! A worker process is lockbench itself (`lockbench worker`): what it writes on stderr is its
//! log lines, nearly all of them its clients' libraries' (a ZooKeeper client reconnecting
//! through every fault). The coordinator's terminal tells the run's story, so once the program
//! has a log file (`lockbench run` makes `lockbench.log` in its run directory) workers write
//! their stderr there, appended to the coordinator's own lines; before that, and in programs
//! that set none (tests, benches), they share the coordinator's stderr.

use std::fs::File;
use std::process::Stdio;
use std::sync::Mutex;

static LOG: Mutex<Option<File>> = Mutex::new(None);

/// Workers spawned from now on write their stderr to `file` (opened for appending).
pub fn send_to(file: File) {
    *LOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
}

/// A new worker's (or adapter's) stderr: the log file when one is set, else the
/// coordinator's stderr.
pub fn stderr() -> Stdio {
    let log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    match log.as_ref().map(File::try_clone) {
        Some(Ok(file)) => Stdio::from(file),
        _ => Stdio::inherit(),
    }
}
