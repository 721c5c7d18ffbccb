//! [`AdapterBackend`]: a lock library behind the adapter protocol, as a lockbench backend.
//!
//! Each client is one adapter process ([`AdapterProcess`]); a lock call is one request line
//! and its answer. What the adapter cannot vouch for, lockbench does not invent: requests sent
//! to the servers are not counted by the client (`requests_sent` is `None`; the servers' own
//! counters, read through the system's own recipe, still are), and the fencing token is the
//! library's or none, as its hello says. The server-side observer is a recipe's whose locks
//! look like the library's on the servers (the manifest's `[observe]`), or none, saying why.
//!
//! A broken adapter (a protocol violation, a hang, an exit) makes the call `info` (its outcome
//! unknown) and is recorded once in [`AdapterBackend::broken`]: the run reports it, names the
//! library and the line, and no verdict of that run is `ok`.

use crate::manifest::Manifest;
use crate::process::{AdapterError, AdapterProcess, ClientEnv};
use crate::protocol::{Answer, Hello, Op};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    AnyBackend, Backend, BackendInfo, BackendKind, ClientId, ErrorKind, Grant, KeyId, LockClient,
    Outcome, ServerCounters,
};
use std::sync::{Arc, Mutex};

/// A library's adapter bound to a cluster.
pub struct AdapterBackend {
    kind: BackendKind,
    manifest: Arc<Manifest>,
    env: ClientEnv,
    /// The first hello seen (library, version, fencing).
    hello: Arc<Mutex<Option<Hello>>>,
    /// The first way the adapter broke the protocol, if it did.
    broken: Arc<Mutex<Option<String>>>,
    /// The system's own recipe on the same servers, for their request counters.
    counters: Option<AnyBackend>,
    /// The recipe whose server-side observer reads the library's locks, or why there is none.
    observer: Result<AnyBackend, String>,
}

impl AdapterBackend {
    /// The adapter of `manifest` for backend `kind` on `servers`, its locks living `life`;
    /// `prefix` keeps the run's keys apart; `counters` reads the servers' request counters.
    pub fn new(
        kind: BackendKind,
        manifest: Manifest,
        servers: &[String],
        life: std::time::Duration,
        acquire_timeout: std::time::Duration,
        prefix: String,
        counters: Option<AnyBackend>,
    ) -> Result<AdapterBackend, BackendError> {
        if servers.is_empty() {
            return Err(BackendError::Config(format!(
                "{kind} needs the cluster's `{}` servers, but its endpoint list is empty",
                manifest.system
            )));
        }
        let env = ClientEnv {
            endpoints: servers.join(","),
            client: 0,
            prefix,
            ttl_ms: life.as_millis() as u64,
            acquire_timeout_ms: acquire_timeout.as_millis() as u64,
        };
        Ok(AdapterBackend {
            kind,
            manifest: Arc::new(manifest),
            env,
            hello: Arc::default(),
            broken: Arc::default(),
            counters,
            observer: Err(format!(
                "{kind}: the library's holders cannot be named from the servers (its manifest \
                 has no `[observe]`: docs/adapter-protocol.md)"
            )),
        })
    }

    /// Server-side truth through `observer`, a recipe whose locks look like the library's on
    /// the servers (the manifest's `[observe]`), or `Err(why)` there is none.
    pub fn with_observer(mut self, observer: Result<AnyBackend, String>) -> AdapterBackend {
        self.observer = observer;
        self
    }

    fn note_broken(
        broken: &Mutex<Option<String>>,
        kind: BackendKind,
        library: &str,
        e: &AdapterError,
    ) {
        let mut slot = broken.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(format!("{kind} (library {library}): {e}"));
        }
    }
}

impl Backend for AdapterBackend {
    type Client = AdapterClient;

    fn info(&self) -> BackendInfo {
        let hello = self.hello.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (library, fencing) = match hello {
            Some(h) => (
                format!("{} {}", h.library, h.version),
                h.fencing
                    .unwrap_or_else(|| "none: the library hands out no token".to_string()),
            ),
            None => (
                self.manifest.library.clone(),
                "unknown (no adapter answered)".into(),
            ),
        };
        BackendInfo {
            backend: self.kind,
            waits_by: format!("the library's own wait ({library}, through the adapter protocol)"),
            fencing,
            knobs: vec![
                ("library".into(), library),
                (
                    "lock_life".into(),
                    humantime::format_duration(std::time::Duration::from_millis(self.env.ttl_ms))
                        .to_string(),
                ),
                ("command".into(), self.manifest.command.join(" ")),
            ],
        }
    }

    fn start_time(&self) -> std::time::Duration {
        self.manifest.start_timeout
    }

    async fn connect(&self, client: ClientId) -> Result<AdapterClient, BackendError> {
        let env = ClientEnv {
            client: client.0,
            ..self.env.clone()
        };
        match AdapterProcess::start(&self.manifest, &env).await {
            Ok((process, hello)) => {
                let mut first = self.hello.lock().unwrap_or_else(|e| e.into_inner());
                if first.is_none() {
                    *first = Some(hello.clone());
                }
                Ok(AdapterClient {
                    process: Some(process),
                    kind: self.kind,
                    library: hello.library,
                    shared: hello.shared,
                    broken: self.broken.clone(),
                })
            }
            Err(e) => {
                Self::note_broken(&self.broken, self.kind, &self.manifest.library, &e);
                Err(BackendError::Config(format!(
                    "{} (library {}), client {}: {e}",
                    self.kind, self.manifest.library, client.0
                )))
            }
        }
    }

    /// How the adapter broke the protocol, when it did: `lib:x (library y): line "...": ...`.
    fn broken(&self) -> Option<String> {
        self.broken
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        match &self.observer {
            Ok(b) => b.observe_server(clock, keys, sink).await,
            Err(why) => Err(why.clone()),
        }
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        match &self.counters {
            Some(b) => b.server_counters().await,
            None => Err(format!(
                "no request counters for the `{}` servers",
                self.manifest.system
            )),
        }
    }
}

/// One client: one adapter process.
pub struct AdapterClient {
    /// `None` once the adapter broke: every later call is `info` at once.
    process: Option<AdapterProcess>,
    kind: BackendKind,
    library: String,
    /// Whether the library has a shared (read) lock (its hello says).
    shared: bool,
    broken: Arc<Mutex<Option<String>>>,
}

/// The held lock: its key (the adapter keeps the library's handle).
pub type AdapterHandle = u32;

impl AdapterClient {
    async fn ask(&mut self, op: Op, key: KeyId) -> Outcome<Option<lockbench_core::FencingToken>> {
        let Some(p) = self.process.as_mut() else {
            return Outcome::Info(ErrorKind::Other);
        };
        match p.call(op, Some(key.0)).await {
            Ok((Answer::Ok(token), _)) => Outcome::Ok(token),
            Ok((Answer::Fail(e), _)) => Outcome::Fail(e),
            Ok((Answer::Info(e), _)) => Outcome::Info(e),
            Err(e) => {
                AdapterBackend::note_broken(&self.broken, self.kind, &self.library, &e);
                tracing::error!("{}: {e}", self.kind);
                if let Some(p) = self.process.take() {
                    p.kill().await;
                }
                Outcome::Info(ErrorKind::Other)
            }
        }
    }
}

impl LockClient for AdapterClient {
    type Handle = AdapterHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<AdapterHandle>> {
        match self.ask(Op::Acquire, key).await {
            Outcome::Ok(token) => Outcome::Ok(Grant {
                key,
                token,
                handle: key.0,
            }),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    async fn acquire_shared(&mut self, key: KeyId) -> Outcome<Grant<AdapterHandle>> {
        let op = if self.shared {
            Op::AcquireShared
        } else {
            Op::Acquire
        };
        match self.ask(op, key).await {
            Outcome::Ok(token) => Outcome::Ok(Grant {
                key,
                token,
                handle: key.0,
            }),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn shared_mode(&self) -> bool {
        self.shared
    }

    async fn release(&mut self, grant: Grant<AdapterHandle>) -> Outcome<()> {
        match self.ask(Op::Release, grant.key).await {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    async fn renew(&mut self, grant: &Grant<AdapterHandle>) -> Outcome<()> {
        match self.ask(Op::Renew, grant.key).await {
            Outcome::Ok(_) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn requests_sent(&self) -> Option<u64> {
        None
    }

    async fn close(mut self) {
        if let Some(p) = self.process.take() {
            p.close().await;
        }
    }

    async fn abandon(mut self) {
        if let Some(p) = self.process.take() {
            p.kill().await;
        }
    }
}
