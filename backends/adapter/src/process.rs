//! One adapter process: started with the client's environment, read for its hello, then
//! asked one request at a time, each answer checked against the request
//! ([`crate::protocol`]) and bounded in time.
//!
//! Why a process per client: a client that a fault pauses, cuts off or kills must take the
//! library's own threads (heartbeats, keep-alives, watchdogs) with it, as a garbage-collection
//! pause or a crash does; a process is the unit the kernel stops and kills.

use crate::manifest::{Manifest, expand};
use crate::protocol::{self, Answer, Hello, Op, Request, Violation};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long an adapter has to answer a release, renew or close, and by default for its hello
/// (a manifest's `start_timeout`).
pub const PROMPT: Duration = Duration::from_secs(5);

/// What went wrong with an adapter process.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// It could not be started.
    #[error("cannot start `{command}` in {dir}: {reason}")]
    Spawn {
        /// The command line.
        command: String,
        /// Its directory.
        dir: String,
        /// Why.
        reason: String,
    },
    /// It broke the protocol.
    #[error("{0}")]
    Protocol(#[from] Violation),
    /// It did not answer in time.
    #[error("no {what} within {}", humantime::format_duration(*within))]
    Silent {
        /// What it owed.
        what: String,
        /// How long it had.
        within: Duration,
    },
}

/// Why `program` did not start, and the fix: what is missing (the program, its directory, a
/// program not on PATH) and how it gets there. A built-in adapter's program is made by
/// `scripts/install-adapters` (the Python adapters' interpreter lives in the project's .venv,
/// so a fresh checkout has none); a user's adapter by its manifest's `build`.
fn spawn_failure(manifest: &Manifest, program: &str, e: &std::io::Error) -> String {
    if e.kind() != std::io::ErrorKind::NotFound {
        return e.to_string();
    }
    let missing = if !manifest.dir.is_dir() {
        format!("its directory {} does not exist", manifest.dir.display())
    } else if program.contains('/') {
        format!("{program} does not exist")
    } else {
        format!("`{program}` is not on PATH")
    };
    let built_in = match (
        manifest.dir.canonicalize(),
        crate::manifest::builtin_dir().canonicalize(),
    ) {
        (Ok(dir), Ok(builtin)) => dir.starts_with(builtin),
        _ => false,
    };
    let fix = if built_in {
        "the adapter is not installed: run `scripts/install-adapters`, which builds every \
         built-in adapter (its manifest's `build`)"
            .to_string()
    } else if !manifest.build.is_empty() {
        format!(
            "the adapter is not built: run its manifest's `build` ({}) in {}",
            manifest.build.join(" "),
            manifest.dir.display()
        )
    } else {
        "install it, or fix the manifest's `command`".to_string()
    };
    format!("{missing} ({e}); {fix}")
}

/// A running adapter.
#[derive(Debug)]
pub struct AdapterProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

/// The environment of one client's adapter.
#[derive(Clone, Debug)]
pub struct ClientEnv {
    /// The servers, comma-separated.
    pub endpoints: String,
    /// The client's id.
    pub client: u32,
    /// The run's key prefix.
    pub prefix: String,
    /// The lock life, in milliseconds.
    pub ttl_ms: u64,
    /// How long lockbench waits for an acquire before it retires the client, in milliseconds.
    pub acquire_timeout_ms: u64,
}

impl AdapterProcess {
    /// Starts `manifest`'s command for one client and reads its hello.
    pub async fn start(
        manifest: &Manifest,
        env: &ClientEnv,
    ) -> Result<(AdapterProcess, Hello), AdapterError> {
        let argv: Vec<String> = manifest.command.iter().map(|a| expand(a)).collect();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&manifest.dir)
            .envs(&manifest.env)
            .env("LOCKBENCH_ENDPOINTS", &env.endpoints)
            .env("LOCKBENCH_CLIENT", env.client.to_string())
            .env("LOCKBENCH_PREFIX", &env.prefix)
            .env("LOCKBENCH_TTL_MS", env.ttl_ms.to_string())
            .env(
                "LOCKBENCH_ACQUIRE_TIMEOUT_MS",
                env.acquire_timeout_ms.to_string(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(lockbench_workloads::worker_log::stderr())
            .kill_on_drop(true);
        let parent = nix::unistd::getpid();
        // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
        // The adapter dies with the process that runs its client (lockbench, or a worker
        // process), however that one dies: a killed worker leaves no library process behind.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)?;
                if nix::unistd::getppid() != parent {
                    nix::libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| AdapterError::Spawn {
            command: argv.join(" "),
            dir: manifest.dir.display().to_string(),
            reason: spawn_failure(manifest, &argv[0], &e),
        })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut p = AdapterProcess {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        let line = p.line(Some(manifest.start_timeout), "hello line").await?;
        let hello = protocol::hello(&line)?;
        Ok((p, hello))
    }

    /// The process id (what a fault signals).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The next line of output, within `bound` when one is given.
    async fn line(&mut self, bound: Option<Duration>, what: &str) -> Result<String, AdapterError> {
        let next = self.lines.next_line();
        let read = match bound {
            Some(b) => tokio::time::timeout(b, next)
                .await
                .map_err(|_| AdapterError::Silent {
                    what: what.to_string(),
                    within: b,
                })?,
            None => next.await,
        };
        match read {
            Ok(Some(line)) => Ok(line),
            Ok(None) | Err(_) => {
                // Its output ends as it exits: give the exit a moment to be seen.
                let exit = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
                let status = match exit {
                    Ok(Ok(s)) => format!("the adapter exited ({s})"),
                    _ => "the adapter closed its output".to_string(),
                };
                Err(Violation::new("<end of output>", format!("the {what}, but {status}")).into())
            }
        }
    }

    /// Sends `op` on `key` and reads its answer. Acquires wait as long as the caller lets
    /// them (the caller's timeout drops this future); every other request is answered within
    /// [`PROMPT`].
    pub async fn call(
        &mut self,
        op: Op,
        key: Option<u32>,
    ) -> Result<(Answer, Option<String>), AdapterError> {
        let request = Request {
            id: self.next_id,
            op,
            key,
        };
        self.next_id += 1;
        let sent = self.stdin.write_all(request.line().as_bytes()).await;
        let flushed = match sent {
            Ok(()) => self.stdin.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = flushed {
            return Err(Violation::new(
                "<stdin closed>",
                format!(
                    "to read request {} ({e}): the adapter stopped reading",
                    request.id
                ),
            )
            .into());
        }
        let bound = match op {
            Op::Acquire | Op::AcquireShared => None,
            Op::Release | Op::Renew | Op::Close => Some(PROMPT),
        };
        let what = format!("answer to request {} ({op:?})", request.id);
        let line = self.line(bound, &what).await?;
        Ok(protocol::answer(&line, &request)?)
    }

    /// Asks the adapter to close and waits for it to exit (bounded), killing it if it does not.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(PROMPT, self.call(Op::Close, None)).await;
        if tokio::time::timeout(PROMPT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// Kills the adapter at once, as a crash would: its library releases nothing.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(dir: std::path::PathBuf, build: &[&str]) -> Manifest {
        Manifest {
            library: "x".into(),
            system: "redis".into(),
            command: vec!["python3".into()],
            lock_life: None,
            start_timeout: PROMPT,
            build: build.iter().map(|s| s.to_string()).collect(),
            env: Default::default(),
            observe: None,
            counters: Default::default(),
            dir,
        }
    }

    #[test]
    fn a_missing_program_is_named_with_the_fix_for_its_kind_of_adapter() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let venv = "/nowhere/.venv/bin/python3";
        let builtin = manifest(crate::manifest::builtin_dir().join("redis-py"), &["pip"]);
        let said = spawn_failure(&builtin, venv, &missing);
        assert!(
            said.contains(&format!("{venv} does not exist"))
                && said.contains("scripts/install-adapters"),
            "{said}"
        );
        let own = manifest(std::env::temp_dir(), &["make", "adapter"]);
        let said = spawn_failure(&own, venv, &missing);
        assert!(
            said.contains("`build` (make adapter)") && !said.contains("install-adapters"),
            "{said}"
        );
        let said = spawn_failure(&own, "no-such-program", &missing);
        assert!(said.contains("`no-such-program` is not on PATH"), "{said}");
        let gone = manifest(std::env::temp_dir().join("lb-no-such-dir"), &[]);
        let said = spawn_failure(&gone, venv, &missing);
        assert!(said.contains("lb-no-such-dir does not exist"), "{said}");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(spawn_failure(&own, venv, &denied), denied.to_string());
    }
}
